from madial import *
from lab import embed
import itertools
# per-line embeddings
lines = sorted({strip_speaker(x) for q in queries for x in q.lines})
LE = embed(lines, "query", "mq-lines"); li = {l:i for i,l in enumerate(lines)}
D = DV["event"]
def perline(decay=0.7, user_w=1.0, asst_w=0.5, agg="wsum"):
    out=[]
    for qi,q in enumerate(queries):
        idx=gidx[q.group]; cl=[strip_speaker(x) for x in q.lines]
        S = D[idx] @ LE[[li[c] for c in cl]].T  # (docs, lines)
        n=len(cl); w=np.array([decay**(n-1-j)*(asst_w if c.startswith("Assistant:") else user_w) for j,c in enumerate(cl)])
        w=w/w.sum()
        s = S@w
        out.append({docs[i].id: float(v) for i,v in zip(idx,s)})
    return out
for decay in (1.0,0.85,0.7,0.5):
  for aw in (1.0,0.5,0.25,0.0):
    report(f"perline decay={decay} asst={aw}", perline(decay,1.0,aw))
# vector-average of views
def vavg(views, w=None):
    out=[]
    w = w or [1]*len(views)
    Q = sum(wi*QV[(v,"query")] for v,wi in zip(views,w))
    for qi,q in enumerate(queries):
        idx=gidx[q.group]; s=D[idx]@Q[qi]
        out.append({docs[i].id: float(v) for i,v in zip(idx,s)})
    return out
for combo in [("user","last2"),("user","last3"),("user","last1"),("user","all"),("user","last1","last2","last3"),("all","last1","last2")]:
    report(f"vavg {combo}", vavg(list(combo)))
