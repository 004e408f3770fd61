# ompi-resilience: sourced by the scripts that fetch Debian source packages
# (scripts/ompi-bootstrap.sh: openmpi from trixie; scripts/check-mpich.sh: mpich;
# bench/run-dr2.sh: netpipe). One deb-src entry per Debian suite, in
# /etc/apt/sources.list.d/ompi-resilience-SUITE-src.sources, pointing at the archive this
# machine already uses.

# The first configured Debian archive URI that is not the security archive (empty: none).
ompires_debian_archive_uri() {
    local f
    {
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -e "$f" ] || continue
            awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' "$f"
        done
        if [ -f /etc/apt/sources.list ]; then
            awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' \
                /etc/apt/sources.list
        fi
    } | head -n 1
}

# Make sure apt has a deb-src entry for SUITE (needs root). Prints the archive URI of a
# newly written entry on stdout (nothing if the entry was already there: no apt-get update
# needed then). Returns 1 when no Debian archive is configured.
ompires_add_deb_src() {
    local suite=$1 uri entry=/etc/apt/sources.list.d/ompi-resilience-$1-src.sources
    uri=$(ompires_debian_archive_uri)
    [ -n "$uri" ] || return 1
    if [ ! -f "$entry" ] || ! grep -q "^URIs: $uri\$" "$entry"; then
        printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
            "$uri" "$suite" /usr/share/keyrings/debian-archive-keyring.gpg >"$entry"
        echo "$uri"
    fi
}
