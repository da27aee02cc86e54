"""What the shells of every app share: the researcher-only decorator, the client's address behind
trusted proxies, long tables in pages, and the middleware refusing NUL characters.
"""
