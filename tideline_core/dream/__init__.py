"""The dream queue's work: stages that digest an agent's memory, each named once in `registry`.

One package per stage pairs its store code with its pure kernel: `scan` (scanner + inferred
source links), `weights` (recurrence and weight refresh), `clusters` (topic and soft clusters),
`entities` (the entity graph). `runs` runs a stage on the record (the `dream_runs` table).
"""

from tideline_core.dream.registry import STAGES, Stage, StageContext, StageOutput, nightly_stages, stage_named

__all__ = ["STAGES", "Stage", "StageContext", "StageOutput", "nightly_stages", "stage_named"]
