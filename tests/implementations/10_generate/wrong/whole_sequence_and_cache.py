"""Feeds the whole sequence at every step AND passes the cache: the cache grows by the whole sequence each
time and every earlier key is stored twice (or more).

expect-fail: ch10_generate_matches_no_cache, ch10_generate_steps
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    cache = KVCache() if use_cache else None
    tokens = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(tokens, cache=cache, start_pos=0)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens
