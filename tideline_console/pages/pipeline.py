"""The pipeline: queues, ingest lag, workers, beat, recent task failures and the last dream, with a link to Flower."""

from __future__ import annotations

from starlette.responses import Response

from tideline_console.visit import PageFunction, Visit


async def pipeline(visit: Visit) -> Response:
    report = await visit.call(visit.service.status, visit.agent)
    beat = await visit.call(visit.console.beats)
    flower = f"http://127.0.0.1:{visit.console.settings.flower_port}/"
    return visit.render("pipeline.html", report=report, beat=beat, flower=flower)


ROUTES: list[tuple[str, list[str], PageFunction, bool]] = [("/pipeline", ["GET"], pipeline, False)]
