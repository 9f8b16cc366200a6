"""The personal-memory protocol (FAMA): build, search and answer in isolation; judged presence and forgetting."""
