"""The cache is kept on the model ("create it once"): the next call of generate finds the old one.

expect-fail: ch10_generate_matches_no_cache, ch10_generate_steps, ch10_generate_details
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    if not hasattr(model, "kv_cache"):
        model.kv_cache = KVCache()
    tokens = prompt
    with torch.no_grad():
        for step in range(max_new_tokens):
            if not use_cache:
                logits = model(tokens)
            elif step == 0:
                logits = model(tokens, cache=model.kv_cache, start_pos=0)
            else:
                logits = model(tokens[:, -1:], cache=model.kv_cache, start_pos=tokens.shape[1] - 1)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens
