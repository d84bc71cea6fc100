"""Each word is scanned from the right when a pair is merged: `a a a` merged by (a, a) becomes `a aa`, not `aa a`.

expect-fail: ch11_learn_bpe_rules
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    words = {word: list(word) + [END_OF_WORD] for word in word_counts}
    merges = []
    for _ in range(num_merges):
        pair_counts = collections.Counter()
        for word, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += word_counts[word]
        if not pair_counts:
            break
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        merges.append(best)
        for word, symbols in words.items():
            out, i = [], len(symbols) - 1
            while i >= 0:
                if i >= 1 and (symbols[i - 1], symbols[i]) == best:
                    out.insert(0, symbols[i - 1] + symbols[i])
                    i -= 2
                else:
                    out.insert(0, symbols[i])
                    i -= 1
            words[word] = out
    return merges
