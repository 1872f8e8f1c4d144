"""What every room shares: the clock, limits, statement deadlines, request shapes and the request log."""
