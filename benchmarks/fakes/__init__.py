"""Compatible test servers over real HTTP, written from each API's reference: MTurk
(:mod:`.mturk`), Prolific (:mod:`.prolific`), OpenAI-style chat completions (:mod:`.openai_chat`).
The tests and the benchmarks start them; no product module imports them.
"""
