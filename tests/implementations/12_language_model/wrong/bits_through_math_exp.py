"""bits_per_character goes through the perplexity, log2(exp(loss)): right for one float, but math.exp and
math.log2 take no tensor of losses (a whole loss curve).

expect-fail: ch12_bits_per_character
"""
# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    perplexity = math.exp(loss_nats)
    return math.log2(perplexity) / chars_per_token
