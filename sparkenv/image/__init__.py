"""`sparkenv build`: render a Dockerfile from a profile + lock, build it through the Docker Engine API, and
tag the image only after it audited itself."""
