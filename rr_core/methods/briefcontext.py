"""BriefContext (004, METHOD.md §10): retrieve, then read in small groups and combine.

1. **Rank** (local): the top n passages by BM25. **Preflight**: when two rankers are
   available, the overlap (IoU) of their top 3 decides: above the threshold, plain RAG over
   the n passages; otherwise map-reduce. With one ranker there is nothing to compare, so it
   says so and map-reduces.
2. **Map**: partitions of g passages, each asked (question first) to pick out what bears on
   the question, in parallel.
3. **Reduce**: one call answers from the extracts, citing their pages.

The trace keeps each partition's extraction and flags partitions whose answers disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rr_core.methods.building import (
    ANSWER_OUTPUT_TOKENS,
    EXTRACT_OUTPUT_TOKENS,
    Context,
    Method,
    answer_outcome,
    failed_parts,
    make_plan,
    words_to_tokens,
)
from rr_core.methods.rag import pages_in_rank_order, passage_details, ranking_step
from rr_core.metrics import fuzzy_match
from rr_core.outputs import AnswerOut, ExtractionOut
from rr_core.passages import Ranked
from rr_core.plans import Call, Conclusion, Phase, PhaseResults, Plan
from rr_core.settings import QUESTION_FIRST

ONE_RANKER = (
    "Only one ranker (BM25) is available, so the preflight cannot compare two rankings; "
    "BriefContext map-reduces."
)


def _partitions(ranked: Sequence[Ranked], size: int) -> list[list[Ranked]]:
    return [list(ranked[i : i + size]) for i in range(0, len(ranked), size)]


def _disagreements(answers: dict[int, str]) -> list[list[int]]:
    """Partitions grouped by matching answers (fuzzy match either way), largest group first."""
    groups: list[list[int]] = []
    for part, answer in answers.items():
        for group in groups:
            if fuzzy_match(answer, [answers[group[0]]]):
                group.append(part)
                break
        else:
            groups.append([part])
    return sorted(groups, key=len, reverse=True)


def _briefcontext(ctx: Context) -> Plan:
    s = ctx.settings
    rank = ranking_step(ctx, s.brief_top_n)
    n_parts = math.ceil(s.brief_top_n / s.brief_partition)
    passage_tokens = words_to_tokens(s.rag_chunk_words) + 8
    map_estimates = tuple(
        ctx.sized_call(
            id=f"map.{i}",
            stage="map",
            task="extract",
            schema=ExtractionOut,
            tokens=s.brief_partition * passage_tokens,
            output_tokens=EXTRACT_OUTPUT_TOKENS,
        )
        for i in range(1, n_parts + 1)
    )
    reduce_estimate = ctx.sized_call(
        id="reduce",
        stage="reduce",
        task="reduce",
        schema=AnswerOut,
        tokens=n_parts * EXTRACT_OUTPUT_TOKENS,
        output_tokens=ANSWER_OUTPUT_TOKENS,
    )

    def decision(done: Sequence[PhaseResults]) -> str:
        # With a second ranker, the IoU of the two top-3 lists would decide here.
        return "map-reduce"

    def resolve_map(done: Sequence[PhaseResults]) -> Phase:
        ranked: list[Ranked] = done[0]["rank"].value
        calls: list[Call] = []
        for i, part in enumerate(_partitions(ranked, s.brief_partition), start=1):
            calls.append(
                ctx.call(
                    id=f"map.{i}",
                    stage="map",
                    task="extract",
                    pages=[(r.passage.page, r.passage.text) for r in part],
                    schema=ExtractionOut,
                    output_tokens=EXTRACT_OUTPUT_TOKENS,
                    chunk=i,
                )
            )
        return Phase(stage="map", steps=tuple(calls))

    def extracts(done: Sequence[PhaseResults]) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        for result in done[1].values():
            if not result.ok or not result.value.relevant:
                continue
            allowed = set(result.step.pages) if isinstance(result.step, Call) else set()
            for extract in result.value.extracts:
                if isinstance(extract.page, int) and extract.page in allowed and extract.text:
                    out.append((extract.page, extract.text))
        return out

    def resolve_reduce(done: Sequence[PhaseResults]) -> Phase:
        found = extracts(done)
        if not found:
            return Phase(stage="reduce", steps=())
        call = ctx.call(
            id="reduce",
            stage="reduce",
            task="reduce",
            pages=found,
            schema=AnswerOut,
            output_tokens=ANSWER_OUTPUT_TOKENS,
        )
        return Phase(stage="reduce", steps=(call,))

    def conclude(done: Sequence[PhaseResults]) -> Conclusion:
        ranked: list[Ranked] = done[0]["rank"].value
        pages = pages_in_rank_order(ranked)
        warnings = failed_parts(done[1], "Reading a group of passages") if len(done) > 1 else []
        partitions: list[dict[str, Any]] = []
        answers: dict[int, str] = {}
        for result in done[1].values() if len(done) > 1 else []:
            step = result.step
            part = step.chunk if isinstance(step, Call) and step.chunk else 0
            entry: dict[str, Any] = {
                "partition": part,
                "pages": list(dict.fromkeys(getattr(step, "pages", ()))),
            }
            if result.ok:
                value: ExtractionOut = result.value
                entry.update(
                    relevant=value.relevant,
                    answer=value.answer,
                    extracts=[{"page": e.page, "text": e.text} for e in value.extracts],
                )
                if value.relevant and value.answer.lower() != "n/a":
                    answers[part] = value.answer
            else:
                entry["error"] = str(result.error)
            partitions.append(entry)
        groups = _disagreements(answers)
        if len(groups) > 1:
            for entry in partitions:
                entry["disagrees"] = entry["partition"] in {p for g in groups[1:] for p in g}
            said = "; ".join(f"group(s) {', '.join(map(str, g))}: “{answers[g[0]]}”" for g in groups)
            warnings.append(f"The groups of passages disagree — {said}.")
        reduce = done[2].get("reduce") if len(done) > 2 else None
        allowed = [p for p, _ in extracts(done)] if len(done) > 1 else []
        outcome, said_answer = answer_outcome(reduce, ctx.questions[0], allowed=allowed)
        warnings.extend(said_answer)
        outcome.retrieved_pages = pages
        if reduce is None:
            outcome.not_stated()
            warnings.append(
                "No passage shares a word with the question."
                if not ranked
                else "No group of passages held anything relevant, so there was nothing to combine."
            )
        details = {
            "retriever": "BM25",
            "preflight": {"decision": decision(done), "iou": None, "note": ONE_RANKER},
            "passages": passage_details(ranked),
            "partitions": partitions,
        }
        return Conclusion([outcome], warnings, details)

    return make_plan(
        ctx,
        phases=(
            Phase(stage="rank", steps=(rank,), note=ONE_RANKER),
            Phase(
                stage="map",
                steps=map_estimates,
                estimated=True,
                resolve=resolve_map,
                note=f"{n_parts} groups of {s.brief_partition} passages, read in parallel",
            ),
            Phase(
                stage="reduce",
                steps=(reduce_estimate,),
                estimated=True,
                resolve=resolve_reduce,
                note="one call combines the groups' extracts",
            ),
        ),
        conclude=conclude,
        notes=(ONE_RANKER,),
    )


BRIEFCONTEXT = Method(
    name="briefcontext",
    label="BriefContext",
    group="other",
    summary="Finds the best-matching passages, reads them in small groups in parallel, then combines what each group found.",
    params=("rag_chunk_words", "brief_top_n", "brief_partition"),
    retrieves=True,
    layouts=QUESTION_FIRST,
    layout_note="004 asks each group of passages with the question first",
    planner=_briefcontext,
)

METHODS = (BRIEFCONTEXT,)
