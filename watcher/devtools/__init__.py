"""Developer tools: the benchmark application (:mod:`.bench`), its report and server process, the demo, and the
runner of the official client's system tests against the embedded server (:mod:`.client_system_tests`)."""
