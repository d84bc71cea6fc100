"""No prefill: the loop feeds only the last token from the start, so the cache never holds the prompt's
first tokens.

expect-fail: ch10_generate_matches_no_cache, ch10_generate_steps
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    tokens = prompt
    cache = KVCache() if use_cache else None
    with torch.no_grad():
        for _ in range(max_new_tokens):
            if use_cache:
                logits = model(tokens[:, -1:], cache=cache, start_pos=tokens.shape[1] - 1)
            else:
                logits = model(tokens)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens
