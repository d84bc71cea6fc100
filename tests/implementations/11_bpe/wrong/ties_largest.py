"""Ties go to the largest pair: `max(pairs, key=lambda p: (counts[p], p))` sorts the pairs the wrong way round.

expect-fail: ch11_learn_bpe_example, ch11_learn_bpe_rules
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    words = {word: list(word) + [END_OF_WORD] for word in word_counts}
    merges = []
    for _ in range(num_merges):
        counts = {}
        for word, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                counts[pair] = counts.get(pair, 0) + word_counts[word]
        if not counts:
            break
        best = max(counts, key=lambda pair: (counts[pair], pair))
        merges.append(best)
        for word, symbols in words.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            words[word] = out
    return merges
