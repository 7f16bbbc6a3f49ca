"""The resolve stage: inputs, profiles, the uv-driven resolution, the policy, lock writing."""
