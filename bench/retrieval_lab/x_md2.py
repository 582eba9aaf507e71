from madial import *
D = DV["event"]
def dense_vec(Q):
    out=[]
    for qi,q in enumerate(queries):
        idx=gidx[q.group]; s=D[idx]@Q[qi]
        out.append({docs[i].id: float(v) for i,v in zip(idx,s)})
    return out
Qu = QV[("user","query")]+QV[("last2","query")]
Qu = Qu/np.linalg.norm(Qu,axis=1,keepdims=True)
base = dense_vec(Qu)
report("dense user+last2", base)
# Rocchio PRF in dense space
def prf(Q, k=3, alpha=0.5, doc_mat=D):
    out=[]
    for qi,q in enumerate(queries):
        idx=gidx[q.group]; s=doc_mat[idx]@Q[qi]
        top=idx[np.argsort(-s)[:k]]
        q2 = Q[qi] + alpha*doc_mat[top].mean(0)
        s2 = doc_mat[idx]@q2
        out.append({docs[i].id: float(v) for i,v in zip(idx,s2)})
    return out
for k in (2,3,5,8):
    for a in (0.3,0.6,1.0):
        report(f"prf k={k} a={a}", prf(Qu,k,a))
# BM25
bm = {g: BM25Index(k1=1.2,b=0.75) for g in groups}
for d in docs: bm[d.group].add(d.id, analyze(d.text))
def bm25q(decay=0.7, asst_w=0.3, k1=1.2, b=0.75):
    out=[]
    for g in groups: bm[g].k1=k1; bm[g].b=b
    for q in queries:
        cl=[strip_speaker(x) for x in q.lines]; n=len(cl); w={}
        for j,c in enumerate(cl):
            lw = decay**(n-1-j)*(asst_w if c.startswith("Assistant:") else 1.0)
            body = c.split(":",1)[1] if ":" in c else c
            for t in analyze(body): w[t]=w.get(t,0)+lw
        out.append(dict(bm[q.group].score(w)))
    return out
for decay in (1.0,0.8,0.6):
    for aw in (1.0,0.5,0.2):
        report(f"bm25 decay={decay} asst={aw}", bm25q(decay,aw))
