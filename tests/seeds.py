"""A small memory with clear topics, meaning clusters and entities, for tests of the script layer."""

from __future__ import annotations

import numpy as np
from sqlalchemy import insert, update

from tideline_core.domain.inputs import NarrativeIn
from tideline_core.embedding import LOCAL_MODEL
from tideline_core.store.database import Database
from tideline_core.store.embeddings import to_blob
from tideline_core.store.narratives import insert_narrative
from tideline_core.store.schema import Embedding, Narrative

# Each group's keyword is in exactly its own narratives, so it survives the document-frequency filter
# (3 ≤ df ≤ max(4, 20% of N)); every other word is in all of them or in one, and is dropped.
GROUPS = ("garden", "compiler", "wedding", "marathon", "harbour")
PER_GROUP = 4
TOPICS = frozenset(GROUPS)


def gesture(group: str, i: int) -> str:
    return f"Moment {'xyzw'[i]}{group[:2]}: the {group} again"


def seed(
    db: Database, agent: str = "alice", *, groups: tuple[str, ...] = GROUPS, nan_vector: bool = False
) -> list[int]:
    """Narratives in groups (a shared keyword, nearby vectors stored as embeddings of the local model)."""
    rng = np.random.default_rng(7)
    ids: list[int] = []
    with db.write() as conn:
        for g, group in enumerate(groups):
            centre = rng.standard_normal(384).astype(np.float32)
            for i in range(PER_GROUP):
                row = insert_narrative(
                    conn,
                    agent,
                    NarrativeIn(
                        gesture=gesture(group, i),
                        tags=[group],
                        entities_role="Alice=judge+execute; Bob=review" if i % 2 else "Carol(ask)→Alice(answer)",
                    ),
                )
                vector = centre + 0.1 * rng.standard_normal(384).astype(np.float32)
                if nan_vector and g == 0 and i == 0:
                    vector[0] = np.nan  # a corrupt vector: soft clustering refuses it
                conn.execute(
                    insert(Embedding).values(
                        kind="narrative",
                        row_id=row.id,
                        agent_id=agent,
                        model=LOCAL_MODEL,
                        dim=384,
                        vector=to_blob(vector / np.linalg.norm(np.nan_to_num(vector))),
                    )
                )
                ids.append(row.id)
        conn.execute(update(Narrative).where(Narrative.id.in_(ids)).values(embedding_state="done"))
    return ids
