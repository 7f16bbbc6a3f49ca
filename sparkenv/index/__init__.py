"""The package-index client: pages, metadata, remote zip reads, wheel file lists, sdist scans,
uv's configured index and cache, credentials found where uv and pip find them (never
written anywhere). A reader: it judges nothing."""
