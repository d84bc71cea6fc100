"""Always uses the cache, whatever use_cache says: the same tokens, but use_cache=False is not the slow way.

expect-fail: ch10_generate_steps
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    cache = KVCache()
    tokens = prompt
    with torch.no_grad():
        for step in range(max_new_tokens):
            if step > 0:
                logits = model(tokens[:, -1:], cache=cache, start_pos=tokens.shape[1] - 1)
            else:
                logits = model(tokens, cache=cache, start_pos=0)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens
