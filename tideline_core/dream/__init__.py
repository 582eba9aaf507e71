"""The dream queue's work: stages that digest an agent's memory, each named once in `registry`.

The stage contract is `contract`. Each stage is a folder named as the stage, pairing its pure
kernel with its store reads, and its function in `stage`: `scan`, `solidify`, `refresh`,
`recluster`, `graph`, `comb`, `drift`, `symbolic`. `runner` runs a stage on the record (the
`dream_runs` table) and applies its plan (`dream_changes`).
"""

from tideline_core.dream.contract import Stage, StageContext, StageOutput
from tideline_core.dream.registry import STAGES, nightly_stages, stage_named

__all__ = ["STAGES", "Stage", "StageContext", "StageOutput", "nightly_stages", "stage_named"]
