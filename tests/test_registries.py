"""The registries that replaced name switches: providers, stages, Lab tasks and method groups."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import fee_document, offline_traces, word_counter

from rr_core.costs import context_window, price_usage
from rr_core.errors import ConfigError
from rr_core.lab import TASKS, TrialSpec, build_trials
from rr_core.lab.haystacks import Trial, TrialRecipe
from rr_core.lab.presets import PRESETS
from rr_core.lab.sweep import BOUNDS, SweepResult
from rr_core.lab.tasks import LabTask
from rr_core.llm import DEFAULT_MODELS, KEY_VARIABLES, PROVIDERS, Usage, describe_provider, get_provider
from rr_core.llm.providers import ALL_PROVIDERS, REGISTRY, PriceAs, starting_provider
from rr_core.methods import all_methods, get_method, methods_in
from rr_core.stages import FALLBACK_COLOUR, StageInfo, register_stage, stacked, stage_info, unregister_stage

# ---- providers ---------------------------------------------------------------------------------


def test_every_engine_is_one_registered_value() -> None:
    assert set(ALL_PROVIDERS) == {
        "offline",
        "openai",
        "anthropic",
        "gemini",
        "openai-compatible",
        "simulated",
    }
    # The app and `ask` choose among the engines that run questions; the simulated reader is the Lab's.
    assert "simulated" in ALL_PROVIDERS and "simulated" not in PROVIDERS
    for name, info in REGISTRY.items():
        assert info.name == name and info.label and info.default_model and info.reader
        assert DEFAULT_MODELS[name] == info.default_model
        # A free engine says so wherever it is shown; a paid one has a price of its own or a named one.
        assert info.free == (not info.is_llm)
        if info.free:
            assert info.note.endswith("not an LLM") and info.lab_info and info.price_as is PriceAs.REQUIRED
            assert not info.key_variable and not info.can_batch
    assert KEY_VARIABLES == {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "gemini": "GEMINI_API_KEY",
    }


def test_the_engine_to_start_with_is_paid_only_with_a_key() -> None:
    assert starting_provider(lambda variable: None).name == "offline"
    assert starting_provider({"ANTHROPIC_API_KEY": "k"}.get).name == "anthropic"
    assert starting_provider({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}.get).name == "openai"
    assert starting_provider({"GEMINI_API_KEY": "k"}.get).name == "gemini"


def test_an_unknown_provider_is_refused_or_described_as_paid() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'mystery'"):
        get_provider("mystery")
    # A stored run of an engine this version does not know is never shown as free.
    info = describe_provider("mystery")
    assert info.is_llm and info.name == "mystery"


def test_a_free_engines_own_tokens_cost_nothing() -> None:
    usage = Usage(input_tokens=1_000, output_tokens=100)
    for info in REGISTRY.values():
        if info.free:
            cost = price_usage(usage, info.default_model, info.name)
            assert cost.total_usd == 0.0 and cost.known
            assert context_window(info.default_model, info.name) is None


def test_model_defaults_come_from_the_registry() -> None:
    simulated = get_provider("simulated")
    assert simulated.model_or_default("gpt-4o") == "simulated"  # it runs itself whatever is asked
    assert simulated.counter_model("simulated") == get_provider("openai").default_model
    openai = get_provider("openai")
    assert openai.model_or_default(None) == openai.default_model and openai.model_or_default(" o3 ") == "o3"
    assert get_provider("offline").default_price_model == openai.default_model
    assert get_provider("anthropic").default_price_model == ""


# ---- stages ------------------------------------------------------------------------------------


@pytest.fixture
def verify_stage() -> Iterator[StageInfo]:  # a stage of its own name: the real "verify" stays
    stage = register_stage(
        StageInfo("second-look", "verification", "#123456", 45, "A second reading checks the answer.")
    )
    yield stage
    unregister_stage("second-look")


def test_a_newly_registered_stage_appears_in_the_cost_chart(verify_stage: StageInfo) -> None:
    from pages.common.results import cost_bars, cost_chart

    traces = offline_traces(fee_document(), "baseline", "rr")
    # The R&R run's answer call becomes a call of the new stage (as a method using it would make).
    rr = traces[1]
    answer = next(c for c in rr.calls if c.stage == "answer")
    answer.stage = "second-look"
    assert rr.cost_by_stage()["second-look"] > 0
    names, bars = cost_bars(traces)
    by_stage = {b.stage: b for b in bars}
    assert by_stage["second-look"].label == "verification" and by_stage["second-look"].colour == "#123456"
    assert by_stage["second-look"].values[names.index("R&R (k = 1,000 · N = 5)")] == pytest.approx(
        rr.cost_by_stage()["second-look"]
    )
    # In the registry's order: after reduce (40), before answer (50).
    order = [b.stage for b in bars]
    assert order.index("second-look") < order.index("answer")
    figure = cost_chart(traces)
    assert "verification" in [bar.name for bar in figure.data]


def test_an_unknown_stage_still_renders_after_the_known_ones() -> None:
    info = stage_info("never-registered")
    assert (info.label, info.colour) == ("never-registered", FALLBACK_COLOUR)
    bars = stacked([{"answer": 1.0, "never-registered": 0.5}, {"answer": 2.0}])
    assert [(b.stage, b.values) for b in bars] == [("answer", (1.0, 2.0)), ("never-registered", (0.5, 0.0))]


# ---- Lab tasks and method groups ----------------------------------------------------------------


def test_build_trials_dispatches_through_the_task_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[TrialSpec] = []
    built: list[TrialRecipe] = []

    def recipes(spec, document, depths, counter) -> list[TrialRecipe]:  # type: ignore[no-untyped-def]
        made.append(spec)
        return [TrialRecipe(task="echo", length=1_000, depth=50.0)]

    def build(recipe, cache, host) -> Trial:  # type: ignore[no-untyped-def]
        built.append(recipe)
        return Trial(
            id=recipe.trial_id,
            task="echo",
            length=recipe.length,
            depth=recipe.depth,
            repeat=0,
            question_id="echo-1",
            question="What?",
            answers=("this",),
            gold_pages=(1,),
            document=cache.document("echo", ["this"]),
            recipe=recipe,
        )

    task = LabTask(name="echo", label="A task of the test", recipes=recipes, build=build)
    monkeypatch.setitem(TASKS, "echo", task)
    spec = TrialSpec(task="echo", lengths=(1_000,), repeats=1)
    (trial,) = build_trials(spec, PRESETS["quick"], None, word_counter())
    assert made == [spec] and built == [trial.recipe] and trial.document.pages[0].text == "this"
    with pytest.raises(ConfigError, match="unknown task 'nothing'"):
        build_trials(
            TrialSpec(task="nothing", lengths=(1_000,), repeats=1), PRESETS["quick"], None, word_counter()
        )


def test_a_task_says_what_it_needs_before_building() -> None:
    with pytest.raises(ConfigError, match=TASKS["planted"].missing):
        build_trials(
            TrialSpec(task="planted", lengths=(1_000,), repeats=1), PRESETS["quick"], None, word_counter()
        )
    assert {t.name for t in TASKS.values() if t.reads_file} == {"passages", "kv"}


def test_the_lab_bounds_are_the_bounds_group() -> None:
    assert tuple(m.name for m in methods_in("bounds")) == BOUNDS and BOUNDS
    assert all(get_method(name).group == "bounds" for name in BOUNDS)
    floors = [m for m in all_methods() if m.floor]
    assert len(floors) == 1 and floors[0].group == "bounds"
    assert SweepResult().closed_book is None
