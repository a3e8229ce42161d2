def is_live():
    """Whether the tests run against a live account; test_config sets the answer in _cache."""
    return is_live._cache


is_live._cache = False
