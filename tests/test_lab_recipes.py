"""Lab trials as recipes: each trial built alone from plain data, exactly as the task's builder
makes it among all the others; sweeps made of jobs that hold recipes, not documents, and
that run the same from a file as in the process that planned them."""

from __future__ import annotations

import gc
import json
import pickle
from pathlib import Path

import pytest
from conftest import ROOT, word_counter
from test_lab import (
    BASE,
    KV_ROWS,
    _lab,
    _neutral_file,
    neutral_document,
    twenty_document_rows,
    write_jsonl_gz,
)

from rr_core.cli import main
from rr_core.documents import Document, load_document
from rr_core.errors import ConfigError
from rr_core.jobs import Job, source_from_dict
from rr_core.lab import TrialSpec, trial_recipes
from rr_core.lab import haystacks as hs
from rr_core.lab.haystacks import (
    PageCounts,
    Trial,
    TrialRecipe,
    forget_shared,
    kv_trials,
    passage_trials,
    planted_trials,
    question_trials,
    read_kv_jsonl,
    read_qa_jsonl,
)
from rr_core.lab.presets import get_preset
from rr_core.lab.sweep import LabJob, TrialMaker, plan_sweep, read_jobs, run_jobs, run_sweep
from rr_core.llm.simulated import SimulatedReader
from rr_core.methods import parse_spec
from rr_core.questions import Question
from rr_core.runs import Executor
from rr_core.tokens import counter_for_model

DATA = ROOT / "tests" / "data" / "qa"  # the QA fixtures, one per format (SOURCES.md there)


def _oracle_rows() -> list[dict[str, object]]:
    """An oracle-only file (one passage per question): distracters are ranked by BM25."""
    return [
        {
            "question": f"who built the {topic} tower",
            "answers": [f"Builder {topic.title()}"],
            "ctxs": [
                {
                    "title": f"{topic.title()} tower",
                    "text": f"The {topic} tower was built by Builder {topic.title()} near the {topic} shore.",
                    "isgold": True,
                }
            ],
        }
        for topic in ("harbour", "glacier", "orchard", "lighthouse", "vineyard", "quarry", "meadow", "canyon")
    ]


def _grids(tmp_path: Path) -> dict[str, tuple[list[Trial], Document | None, TrialSpec, list[float]]]:
    """Each task's trials as its builder makes them all at once, the host document, and the
    spec that asks for the same grid."""
    counter = word_counter()
    document = neutral_document()
    lengths, depths, cut = (3_000, 7_000, 5_000), [0.0, 30.0, 60.0, 100.0], {3_000: 2, 7_000: 4, 5_000: 3}

    def depth_at(length: int) -> list[float]:
        return depths[: cut[length]]  # another number of depths at each length

    own = write_jsonl_gz(tmp_path / "twenty.jsonl.gz", twenty_document_rows(4))
    oracle = write_jsonl_gz(tmp_path / "oracle.jsonl.gz", _oracle_rows())
    kv_file = write_jsonl_gz(tmp_path / "kv.jsonl.gz", KV_ROWS)
    questions = (
        Question("What do members discuss?", ("the garden rota",), (3,)),
        Question("When is the next meeting?", ("the usual weekday",), (12, 13)),
    )
    planted_spec = TrialSpec(
        task="planted", lengths=lengths, repeats=3, seed=4, paraphrase=True, distracters=3
    )
    return {
        "planted": (
            planted_trials(
                document,
                PageCounts(counter),
                lengths=lengths,
                depths=depth_at,
                repeats=3,
                seed=4,
                paraphrase=True,
                distracters=3,
            ),
            document,
            planted_spec,
            depths,
        ),
        "passages": (
            passage_trials(
                read_qa_jsonl(own),
                PageCounts(counter),
                lengths=(400, 150),
                depths=depths,
                repeats=3,
                seed=2,
                file=own,
            ),
            None,
            TrialSpec(task="passages", lengths=(400, 150), repeats=3, seed=2, qa_file=own),
            depths,
        ),
        "passages-bm25": (
            passage_trials(
                read_qa_jsonl(oracle),
                PageCounts(counter),
                lengths=(92, 46),
                depths=depths,
                repeats=5,
                seed=1,
                file=oracle,
            ),
            None,
            TrialSpec(task="passages", lengths=(92, 46), repeats=5, seed=1, qa_file=oracle),
            depths,
        ),
        "kv": (
            kv_trials(PageCounts(counter), pairs=(12, 5, 30), depths=depths, repeats=3, seed=6),
            None,
            TrialSpec(task="kv", lengths=(12, 5, 30), repeats=3, seed=6),
            depths,
        ),
        "kv-file": (
            kv_trials(
                PageCounts(counter),
                pairs=(0, 140, 40),
                depths=depths,
                repeats=2,
                seed=3,
                rows=read_kv_jsonl(kv_file),
                file=kv_file,
            ),
            None,
            TrialSpec(task="kv", lengths=(0, 140, 40), repeats=2, seed=3, qa_file=kv_file),
            depths,
        ),
        **{
            name: (
                passage_trials(
                    read_qa_jsonl(path, unanswerable=True),
                    PageCounts(counter),
                    lengths=sizes,
                    depths=depths,
                    repeats=4,
                    seed=5,
                    file=path,
                    unanswerable=True,
                ),
                None,
                TrialSpec(task="passages", lengths=sizes, repeats=4, seed=5, qa_file=path, unanswerable=True),
                depths,
            )
            for name, path, sizes in (
                ("nq-retrieval", DATA / "nq-retrieval-results-sample.jsonl.gz", (1_400, 700)),
                ("squad", DATA / "squad-v2-sample.json", (250, 150)),
                ("hotpotqa", DATA / "hotpotqa-distractor-sample.json", (300, 150)),
                ("pubmedqa", DATA / "pubmedqa-sample.json", (1_500, 600)),
            )
        },
        "questions": (
            question_trials(document, questions),
            document,
            TrialSpec(task="questions", lengths=(1,), repeats=1, questions=questions),
            depths,
        ),
    }


TASKS = ("planted", "passages", "passages-bm25", "kv", "kv-file", "questions", "nq-retrieval", "squad", "hotpotqa",
         "pubmedqa")  # fmt: skip


@pytest.mark.parametrize("task", TASKS)
def test_each_recipe_builds_alone_the_trial_its_task_builder_makes(tmp_path: Path, task: str) -> None:
    trials, host, spec, depths = _grids(tmp_path)[task]
    assert len(trials) >= 2 and all(t.recipe is not None for t in trials)
    same_depths = trials
    if task == "planted":
        # The grid above has another number of depths at each length; a spec asks for one
        # list at every length: the builder's grid with that list.
        same_depths = planted_trials(
            host,  # type: ignore[arg-type]
            PageCounts(word_counter()),
            lengths=spec.lengths,
            depths=depths,
            repeats=spec.repeats,
            seed=spec.seed,
            paraphrase=True,
            distracters=3,
        )
    # The recipes the Lab's spec makes are the builder's, in the builder's order.
    recipes = trial_recipes(spec, get_preset("quick"), host, word_counter(), depths=depths)
    assert recipes == [t.recipe for t in same_depths]
    # Each one, built alone (nothing kept from building the others, last first), is the same
    # trial: the same pages, question, answers and gold pages.
    for trial in reversed(trials):
        forget_shared()
        assert trial.recipe is not None
        alone = trial.recipe.build(word_counter(), host)
        assert [p.text for p in alone.document.pages] == [p.text for p in trial.document.pages]
        assert (alone.question, alone.answers, alone.gold_pages) == (
            trial.question,
            trial.answers,
            trial.gold_pages,
        )
        assert alone == trial


def test_planted_recipes_replay_the_distracter_draws_of_the_cells_before_them() -> None:
    # A cell's distracters are drawn after those of the cells before it in its repeat: built
    # alone, the recipe replays those draws (their number of pages and of distracters).
    document = neutral_document()
    trials = planted_trials(
        document,
        PageCounts(word_counter()),
        lengths=(6_000, 3_000),
        depths=(0, 50, 100),
        repeats=1,
        distracters=4,
    )
    last = trials[-1]
    assert last.recipe is not None and last.recipe.depth_counts == (3, 3)
    forget_shared()
    assert last.recipe.build(word_counter(), document) == last
    # Distracters land on other pages than the draws of a repeat's first cell would put them.
    placed = [
        {p.number for p in t.document.pages if "\n\n" in p.text and p.number not in t.gold_pages}
        for t in trials
    ]
    assert len({frozenset(p) for p in placed}) > 1


def test_a_recipe_builds_the_same_trial_every_time(tmp_path: Path) -> None:
    for trials, host, _, _ in _grids(tmp_path).values():
        recipe = trials[len(trials) // 2].recipe
        assert recipe is not None
        first = recipe.build(word_counter(), host)
        forget_shared()
        assert recipe.build(word_counter(), host) == first
        assert first.id == recipe.trial_id and first.question_id == recipe.question_id


def test_a_recipe_round_trips_through_json_and_pickle_as_a_job_source(tmp_path: Path) -> None:
    for trials, _, _, _ in _grids(tmp_path).values():
        for trial in trials[:3]:
            recipe = trial.recipe
            assert recipe is not None
            data = json.loads(json.dumps(recipe.to_dict()))
            assert data["kind"] == "trial" and source_from_dict(data) == recipe
            assert pickle.loads(pickle.dumps(recipe)) == recipe
            job = Job(id="j", source=recipe, settings=BASE, questions=(trial.question,))
            assert Job.from_dict(json.loads(json.dumps(job.to_dict()))) == job
            # A recipe, not a document: its JSON holds no page of the trial.
            assert trial.document.pages[-1].text not in json.dumps(job.to_dict())
    with pytest.raises(ConfigError, match="Not a trial recipe"):
        source_from_dict({"kind": "trial", "task": "planted"})


def test_a_recipe_whose_file_changed_is_refused(tmp_path: Path) -> None:
    path = write_jsonl_gz(tmp_path / "twenty.jsonl.gz", twenty_document_rows(3))
    spec = TrialSpec(task="passages", lengths=(400,), repeats=2, qa_file=path)
    recipe = trial_recipes(spec, get_preset("lost-in-the-middle"), None, word_counter(), depths=[50.0])[0]
    assert recipe.build(word_counter()).task == "passages"
    write_jsonl_gz(path, twenty_document_rows(4))  # the same name, other bytes
    with pytest.raises(ConfigError, match="changed since the sweep was planned"):
        recipe.build(word_counter())
    path.unlink()
    with pytest.raises(ConfigError, match="cannot be read"):
        recipe.build(word_counter())


def test_a_recipe_on_another_document_is_refused() -> None:
    document = neutral_document()
    (trial, *_) = planted_trials(
        document, PageCounts(word_counter()), lengths=(2_000,), depths=(50,), repeats=1
    )
    assert trial.recipe is not None
    with pytest.raises(ConfigError, match="not the document given"):
        trial.recipe.build(word_counter(), neutral_document(pages=12))
    with pytest.raises(ConfigError, match="not the document given"):
        trial.recipe.build(word_counter(), None)


def _live_documents() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Document)


def test_planning_a_sweep_builds_each_trial_once_and_holds_a_few_documents_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    document = neutral_document(pages=20, words_per_page=150)
    spec = TrialSpec(task="planted", lengths=(1_000, 2_000), repeats=20, distracters=1)
    depths = [0.0, 25.0, 50.0, 75.0, 100.0]
    recipes = trial_recipes(spec, get_preset("quick"), document, word_counter(), depths=depths)
    assert len(recipes) == 200
    built: list[str] = []
    live: list[int] = []
    original = hs._planted_trial

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        trial = original(*args, **kwargs)
        built.append(trial.id)
        if len(built) % 10 == 0:
            live.append(_live_documents())
        return trial

    monkeypatch.setattr(hs, "_planted_trial", counting)
    gc.collect()
    before = _live_documents()
    plan = plan_sweep(
        recipes, [parse_spec("baseline", BASE)], word_counter(), documents=(document,), bounds=False
    )
    assert sorted(built) == sorted(r.trial_id for r in recipes)  # each trial built once
    assert len(plan.trials) == len(plan.jobs) == 200
    # The host, the trial being planned, perhaps the last one: never all 200.
    assert max(live) - before <= 3, live
    # The plan keeps the trials' facts and the jobs their recipes, not the documents.
    assert all(isinstance(job.source, TrialRecipe) for job in plan.jobs)
    gc.collect()
    assert _live_documents() - before <= 1


def test_a_sweep_planned_from_recipes_runs_as_one_planned_from_built_trials() -> None:
    counter = word_counter()
    document = neutral_document()
    trials = planted_trials(document, PageCounts(counter), lengths=(4_000,), depths=(0, 50, 100), repeats=2)
    series = [parse_spec(s, BASE) for s in ("baseline", "rr:k=1000")]
    built = plan_sweep(trials, series, counter)
    lazy = plan_sweep([t.recipe for t in trials], series, counter, documents=(document,))  # type: ignore[misc]
    assert built.jobs == lazy.jobs and built.trials == lazy.trials
    assert (built.calls, built.input_tokens, built.usd) == (lazy.calls, lazy.input_tokens, lazy.usd)
    with Executor(SimulatedReader(reach=1_500, counter=counter), concurrency=2) as executor:
        first = run_sweep(built, executor)
    with Executor(SimulatedReader(reach=1_500, counter=counter), concurrency=2) as executor:
        second = run_sweep(lazy, executor)
    assert first.scores == second.scores and first.bound_scores == second.bound_scores
    assert not first.failures and {s.trial for s in first.scores} == {t.id for t in trials}
    # The run recorded the trial's facts: scoring needs neither the trial nor the plan.
    assert {LabJob.of(j).trial for j in lazy.jobs} == {t.id for t in trials}


def test_jobs_written_by_the_cli_run_elsewhere_score_as_the_sweep_in_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _neutral_file(tmp_path)
    out = tmp_path / "jobs.jsonl"
    grid = ("--methods", "baseline,rr:k=1000", "--lengths", "4000", "--depths", "0,50,100", "--repeats", "2")
    code, dry, err = _lab(
        capsys, str(path), "--provider", "simulated", *grid, "--dry-run", "--jobs-out", str(out)
    )
    assert code == 0, err
    lines = out.read_text(encoding="utf-8").splitlines()
    assert dry["jobs"] == dry["plan"]["jobs"] == dry["plan"]["runs"] == len(lines) > 0
    jobs = read_jobs(out.read_text(encoding="utf-8"))
    # The sweep as the CLI runs it, in its process.
    code, ran, err = _lab(capsys, str(path), "--provider", "simulated", *grid)
    assert code == 0, err
    # A worker: the jobs from the file, the document loaded again, the jobs' own tokenizer.
    counter = counter_for_model(jobs[0].token_model)
    maker = TrialMaker(counter, [load_document(path)])
    with Executor(SimulatedReader(reach=4_000, counter=counter), concurrency=2) as executor:
        result = run_jobs(jobs, executor, maker)
    assert not result.failures and len(result.scores) + len(result.bound_scores) == len(jobs)
    assert [(s["method"], s["trials"], s["accuracy"]) for s in ran["series"]] == [
        (s.series, s.trials, None if s.accuracy is None else round(s.accuracy, 4)) for s in result.summaries
    ]
    assert [c["correct"] for c in ran["cells"]] == [c.correct for c in result.cells]
    # The same scores, run for run, as the sweep planned and run in this process.
    spec = TrialSpec(task="planted", lengths=(4_000,), repeats=2)
    document = load_document(path)
    recipes = trial_recipes(spec, get_preset("quick"), document, counter, depths=[0.0, 50.0, 100.0])
    series = [parse_spec(s, jobs[0].settings.but(method="baseline")) for s in ("baseline", "rr:k=1000")]
    plan = plan_sweep(recipes, series, counter, documents=(document,), tokenizer=jobs[0].token_model)
    assert [j.to_dict() for j in plan.jobs] == [j.to_dict() for j in jobs]
    with Executor(SimulatedReader(reach=4_000, counter=counter), concurrency=2) as executor:
        here = run_sweep(plan, executor)
    assert here.scores == result.scores and here.bound_scores == result.bound_scores


def test_reading_jobs_names_a_line_that_is_not_one() -> None:
    with pytest.raises(ConfigError, match="Line 2 is not a job"):
        read_jobs(
            '{"schema_version": 1, "id": "x", "source": {"kind": "document", "sha256": "0"}, '
            '"settings": {}, "questions": ["q?"]}\n{"id": 3}\n'
        )


def test_jobs_out_to_a_folder_that_does_not_exist_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _neutral_file(tmp_path)
    target = tmp_path / "missing" / "jobs.jsonl"
    code = main(
        [
            "lab",
            str(path),
            "--provider",
            "simulated",
            "--lengths",
            "2000",
            "--dry-run",
            "--jobs-out",
            str(target),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "--jobs-out" in err and "cannot write there" in err and not target.exists()
    written = tmp_path / "jobs.jsonl"
    code = main(
        [
            "lab",
            str(path),
            "--provider",
            "simulated",
            "--lengths",
            "2000",
            "--dry-run",
            "--jobs-out",
            str(written),
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0 and f"jobs written to {written}" in out
    assert len(read_jobs(written.read_text(encoding="utf-8"))) == len(written.read_text().splitlines()) > 0


def test_a_file_changed_between_planning_and_running_fails_each_run_with_the_reason(tmp_path: Path) -> None:
    path = write_jsonl_gz(tmp_path / "twenty.jsonl.gz", twenty_document_rows(3))
    counter = word_counter()
    spec = TrialSpec(task="passages", lengths=(400,), repeats=2, qa_file=path)
    recipes = trial_recipes(spec, get_preset("lost-in-the-middle"), None, counter, depths=[0.0, 100.0])
    plan = plan_sweep(recipes, [parse_spec("baseline", BASE)], counter, bounds=False)
    write_jsonl_gz(path, twenty_document_rows(4))
    with Executor(SimulatedReader(reach=1_500, counter=counter), concurrency=2) as executor:
        result = run_sweep(plan, executor)
    assert executor.calls_made == 0 and len(result.scores) == len(plan.jobs) == 4
    # Scored from the job's recipe alone: each failure names its trial and why.
    assert all(s.failed for s in result.scores)
    assert [s.trial for s in result.scores] == [r.trial_id for r in recipes]
    assert all("changed since the sweep was planned" in f for f in result.failures)
    assert result.failure_reasons[0][1] == 4
