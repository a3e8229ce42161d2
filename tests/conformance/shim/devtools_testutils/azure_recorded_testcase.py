def get_credential(is_async=False):
    """Only asked for when ACCOUNT_HOST is not the emulator's address, which these runs never do."""
    raise RuntimeError("these runs use the emulator's key; leave ACCOUNT_HOST unset")
