"""An embedded, Spanner-compatible gRPC server for local development and tests."""
