"""Merges done on the text of the symbols joined by spaces, with `str.replace`: `"aa </w>".replace("a </w>", "a</w>")`
also glues the end of the symbol `aa` to `</w>`, a pair that was never counted.

expect-fail: ch11_learn_bpe_example, ch11_learn_bpe_rules
"""
# cell: ch11_learn_bpe_function
def learn_bpe(word_counts, num_merges):
    words = {word: " ".join(list(word) + [END_OF_WORD]) for word in word_counts}
    merges = []
    while len(merges) < num_merges:
        pair_counts = collections.Counter()
        for word, text in words.items():
            symbols = text.split()
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += word_counts[word]
        if not pair_counts:
            break
        a, b = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        merges.append((a, b))
        words = {word: text.replace(a + " " + b, a + b) for word, text in words.items()}
    return merges
