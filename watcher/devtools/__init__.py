"""Developer tools: the benchmark application (:mod:`.bench`), its report and server process, and the demo."""
