"""GPT-2's way of encoding: give every merge its rank (its position in the list), then repeatedly merge the pair
of lowest rank present in the word, every occurrence at once, until no known pair is left. Learning keeps the
corpus as a list of (symbols, count) tuples and picks the best pair by sorting; a float answer to the first question.
"""
# cell: ch11_learn_bpe_function
def merge_everywhere(symbols, pair):
    merged = []
    i = 0
    while i < len(symbols):
        if symbols[i] == pair[0] and i + 1 < len(symbols) and symbols[i + 1] == pair[1]:
            merged.append(pair[0] + pair[1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return tuple(merged)


def learn_bpe(word_counts, num_merges):
    corpus = [(tuple(word) + (END_OF_WORD,), count) for word, count in word_counts.items()]
    merges = []
    while len(merges) < num_merges:
        counts = collections.Counter()
        for symbols, count in corpus:
            for pair in zip(symbols, symbols[1:]):
                counts[pair] += count
        if len(counts) == 0:
            return merges
        best = sorted(counts, key=lambda pair: (-counts[pair], pair))[0]
        merges.append(best)
        corpus = [(merge_everywhere(symbols, best), count) for symbols, count in corpus]
    return merges


# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    ranks = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(tuple(pair), rank)
    symbols = tuple(word) + (END_OF_WORD,)
    while len(symbols) > 1:
        present = [pair for pair in zip(symbols, symbols[1:]) if pair in ranks]
        if not present:
            break
        first = min(present, key=ranks.get)
        symbols = merge_everywhere(symbols, first)
    return list(symbols)


# cell: ch11_question_gpt2_vocab
answer_gpt2_vocab = 50257.0
