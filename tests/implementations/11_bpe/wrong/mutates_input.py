"""The caller's dictionary is rewritten in place (Sennrich's reference code keeps the segmented words as the keys):
the merges are right, but `word_counts` comes back as `{"l o w </w>": 5, ...}`.

expect-fail: ch11_learn_bpe_rules
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    for word in list(word_counts):
        word_counts[tuple(word) + (END_OF_WORD,)] = word_counts.pop(word)
    merges = []
    for _ in range(num_merges):
        pair_counts = collections.Counter()
        for symbols, count in word_counts.items():
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += count
        if not pair_counts:
            break
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        merges.append(best)
        for symbols in list(word_counts):
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            word_counts[tuple(out)] = word_counts.pop(symbols)
    return merges
