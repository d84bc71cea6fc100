"""start_pos is the length of the sequence after appending the new token, one more than its position.

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
        logits = model(prompt, cache=cache, start_pos=0)
        for step in range(max_new_tokens):
            next_id = logits[:, -1].argmax(dim=-1, keepdim=True)
            tokens = torch.cat([tokens, next_id], dim=1)
            if step < max_new_tokens - 1:
                logits = model(next_id, cache=cache, start_pos=tokens.shape[1])
    return tokens
