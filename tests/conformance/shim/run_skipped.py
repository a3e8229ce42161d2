def pytest_collection_modifyitems(items):
    """Drops the unconditional skip markers, so those tests run too."""
    for item in items:
        item.own_markers = [mark for mark in item.own_markers if mark.name != "skip"]
