"""With the cache, every new token is fed with start_pos=0: the model sees it at position 0 again.

expect-fail: ch10_generate_matches_no_cache, ch10_generate_steps, ch10_generate_details
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    tokens = prompt
    with torch.no_grad():
        if not use_cache:
            for _ in range(max_new_tokens):
                next_id = model(tokens)[:, -1].argmax(dim=-1, keepdim=True)
                tokens = torch.cat([tokens, next_id], dim=1)
            return tokens
        cache = KVCache()
        feed = prompt
        for _ in range(max_new_tokens):
            logits = model(feed, cache=cache)
            next_id = logits[:, -1].argmax(dim=-1, keepdim=True)
            tokens = torch.cat([tokens, next_id], dim=1)
            feed = next_id
    return tokens
