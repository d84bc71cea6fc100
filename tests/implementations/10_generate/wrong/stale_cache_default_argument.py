"""The cache is a default argument, created once when the function is defined: the first call is right, every
later call starts with the keys of the calls before.

expect-fail: ch10_generate_matches_no_cache, ch10_generate_steps, ch10_generate_details
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True, cache=KVCache()):
    model.eval()
    tokens = prompt
    with torch.no_grad():
        for step in range(max_new_tokens):
            if not use_cache:
                logits = model(tokens)
            elif step == 0:
                logits = model(tokens, cache=cache, start_pos=0)
            else:
                logits = model(tokens[:, -1:], cache=cache, start_pos=tokens.shape[1] - 1)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens
