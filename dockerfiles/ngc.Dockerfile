# A sparkenv image: {{PROFILE}} + {{LOCK}}. Rendered by `sparkenv build` (sparkenv {{VERSION}}) from
# dockerfiles/ngc.Dockerfile; edit the template, not this output. The classic builder builds it, BuildKit
# when an index needs a credential (a secret mount in the fetch stage: no layer holds it).

# ---- fetch: download the locked wheels, hash-checked. The only stage that sees a CA bundle or an index's
# ---- credentials (a netrc mounted as a BuildKit secret for each download); it is not part of the final image.
FROM {{BASE}} AS fetch
{{FETCH}}

# ---- the image --------------------------------------------------------------------------------------
FROM {{BASE}}
USER root
# What the base provides, recorded before anything is installed; checked again after the lock's stages.
COPY sparkenv/base_check.py /opt/sparkenv/base_check.py
RUN python3 /opt/sparkenv/base_check.py snapshot /opt/sparkenv/base-packages.json {{PROVIDED}}
{{INSTALL}}
RUN python3 /opt/sparkenv/base_check.py compare /opt/sparkenv/base-packages.json
# sparkenv itself, from a wheel of the sparkenv that rendered this file, with its runtime in its own folder: nothing of
# the base's site-packages moves for it (and the base's pip constraints do not apply to that folder).
COPY sparkenv/runtime /tmp/sparkenv-runtime
RUN env -u PIP_CONSTRAINT python3 -m pip install --no-deps --no-index --require-hashes --no-cache-dir --disable-pip-version-check \
        --target /opt/sparkenv/lib -r /tmp/sparkenv-runtime/requirements.txt \
    && rm -rf /tmp/sparkenv-runtime
COPY sparkenv/sparkenv.sh /usr/local/bin/sparkenv
COPY lock/pylock.toml /opt/sparkenv/pylock.toml
{{PROFILE_FILE}}
{{SDPA}}
ENV SPARKENV_GATE=warn
LABEL {{LABELS}}
# The gate first, then the base's own ENTRYPOINT (NGC's runs its entrypoint.d parts), then the workload;
# the base's CMD stays the default command. Both read from the base's configuration by `sparkenv build`.
ENTRYPOINT {{ENTRYPOINT}}
CMD {{CMD}}
