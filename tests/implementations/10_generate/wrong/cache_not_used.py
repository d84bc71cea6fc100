"""use_cache is accepted but the cache is never used: every step runs the whole sequence again. The tokens
are right; the cost per step is not.

expect-fail: ch10_generate_steps
"""
# cell: ch10_generate_function
def generate(model, prompt, max_new_tokens, use_cache=True):
    model.eval()
    tokens = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(tokens)
            tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return tokens
