"""`specops replay`: predicted tokens per step of speculation settings, from the target's greedy outputs on a
profile's prompts and the engines' own proposers (vLLM's n-gram matcher, arctic-inference's suffix trees) run in
the vLLM venv. Greedy verification accepts a draft's longest prefix equal to the target's own continuation, so
the replay is exact up to batching effects."""
