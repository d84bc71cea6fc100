r"""Sennrich's reference code, adapted to the exercise: each word kept as its symbols joined by spaces, pairs counted
on `split()`, a merge done by a regular expression that matches whole symbols only (`(?<!\S)` and `(?!\S)`); the
answers to the questions written as expressions and with spaces and a capital letter.
"""
# cell: ch11_learn_bpe_function
import re


def learn_bpe(word_counts, num_merges):
    vocab = {" ".join(list(word) + [END_OF_WORD]): count for word, count in word_counts.items()}
    merges = []
    for _ in range(num_merges):
        stats = collections.defaultdict(int)
        for text, count in vocab.items():
            symbols = text.split()
            for i in range(len(symbols) - 1):
                stats[symbols[i], symbols[i + 1]] += count
        if not stats:
            break
        best = sorted(stats.items(), key=lambda item: (-item[1], item[0]))[0][0]
        pattern = re.compile(r"(?<!\S)" + re.escape(" ".join(best)) + r"(?!\S)")
        vocab = {pattern.sub("".join(best), text): count for text, count in vocab.items()}
        merges.append(best)
    return merges


# cell: ch11_bpe_encode_function
def bpe_encode(word, merges):
    text = " ".join(list(word) + [END_OF_WORD])
    for a, b in merges:
        text = re.sub(r"(?<!\S)" + re.escape(a + " " + b) + r"(?!\S)", lambda _: a + b, text)
    return text.split()


# cell: ch11_question_gpt2_vocab
answer_gpt2_vocab = 256 + 50_000 + 1

# cell: ch11_question_order_model
answer_order_model = " D "
