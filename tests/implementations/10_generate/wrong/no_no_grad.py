"""No torch.no_grad(): every step builds an autograd graph (and keeps the cache's tensors attached to it).

expect-fail: ch10_generate_details
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    cache = KVCache() if use_cache else None
    tokens = prompt
    for step in range(max_new_tokens):
        if use_cache and step > 0:
            logits = model(tokens[:, -1:], cache=cache, start_pos=tokens.shape[1] - 1)
        else:
            logits = model(tokens, cache=cache, start_pos=0)
        tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens
