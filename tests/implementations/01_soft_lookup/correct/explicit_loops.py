"""Plain Python loops over queries and keys with math.exp, the way one would do it by hand."""
# cell: ch01_soft_lookup
def soft_lookup(query, keys, values, temperature=1.0):
    if np.ndim(query) == 2:
        pairs = [soft_lookup(q, keys, values, temperature) for q in query]
        return np.array([o for o, _ in pairs]), np.array([w for _, w in pairs])
    n, d = len(keys), len(query)
    scores = [sum(query[i] * keys[j][i] for i in range(d)) / temperature for j in range(n)]
    best = max(scores)
    exps = [math.exp(s - best) for s in scores]
    total = sum(exps)
    weights = np.array([e / total for e in exps])
    output = np.zeros(values.shape[1])
    for j in range(n):
        output += weights[j] * values[j]
    return output, weights
