#!/usr/bin/env bash
# Builds Debian's own abseil with clang and -fsanitize=thread, so that
# ThreadSanitizer sees absl::Mutex, and prints its install prefix as the last
# line of standard output (everything else goes to standard error).
#
# The source is the source package of the installed libabsl-dev, at the same
# version and with Debian's patches applied (`apt-get source`), fetched through
# a private apt configuration: a deb-src entry for the mirror and suite that the
# installed version came from. The system's apt sources and lists are not
# touched. The result is cached outside the checkout, in
# ${ACCELSCHED_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/accelsched}, and reused
# while the abseil version, the clang version and this script are unchanged.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

package=libabsl-dev
binary_version="$(dpkg-query -W -f='${Version}' "$package")"
source_package="$(dpkg-query -W -f='${source:Package}' "$package")"
source_version="$(dpkg-query -W -f='${source:Version}' "$package")"
clang_version="$(clang -dumpversion)"
recipe="$(sha256sum "$script" | cut -c1-12)"
cache_root="${ACCELSCHED_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/accelsched}"
dir="$cache_root/abseil-tsan-$source_version-clang$clang_version-$recipe"
prefix="$dir/install"
if [[ -f "$prefix/.complete" ]]; then
  echo "tsan_abseil: reusing $prefix" >&2
  echo "$prefix"
  exit 0
fi

rm -rf "$dir"
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" \
  "$dir/apt/sources.list.d" "$dir/src"

# The archives that serve the installed version, from apt-cache policy:
#  *** 20220623.1-1+deb12u2 500
#         500 http://deb.debian.org/debian bookworm/main amd64 Packages
#         100 /var/lib/dpkg/status
apt-cache policy "$package" | awk -v version="$binary_version" '
  $1 == "***" { take = ($2 == version); next }
  NF == 2 { take = 0; next }  # the next version line
  take && $2 ~ /^[a-z+]+:\/\// {
    split($3, sc, "/")
    print "deb-src", $2, sc[1], sc[2]
  }' | sort -u > "$dir/apt/sources.list"
if [[ ! -s "$dir/apt/sources.list" ]]; then
  echo "tsan_abseil: no archive serves $package $binary_version (apt-cache policy):" >&2
  apt-cache policy "$package" >&2
  exit 1
fi
echo "tsan_abseil: source from $(tr '\n' ';' < "$dir/apt/sources.list")" >&2

apt_options=(
  -o "Dir::Etc::SourceList=$dir/apt/sources.list"
  -o "Dir::Etc::SourceParts=$dir/apt/sources.list.d"
  -o "Dir::State::Lists=$dir/apt/lists"
  -o "Dir::Cache=$dir/apt/cache"
)
# Root's downloads would otherwise go through the _apt user, which cannot
# write to this directory.
if [[ $(id -u) -eq 0 ]]; then apt_options+=(-o APT::Sandbox::User=root); fi
apt-get "${apt_options[@]}" -qq update >&2
(cd "$dir/src" &&
  apt-get "${apt_options[@]}" -qq source "$source_package=$source_version" >&2)
src="$(find "$dir/src" -mindepth 1 -maxdepth 1 -type d -name "$source_package-*")"
if [[ -z "$src" ]]; then
  echo "tsan_abseil: apt-get source unpacked nothing in $dir/src" >&2
  exit 1
fi

# As debian/rules builds it (C++17, static), plus clang and ThreadSanitizer.
log="$dir/build.log"
echo "tsan_abseil: building $source_package $source_version with clang $clang_version (log: $log)" >&2
if ! {
  CC=clang CXX=clang++ cmake -S "$src" -B "$dir/build" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
    -DABSL_PROPAGATE_CXX_STD=ON -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
    -DCMAKE_INSTALL_PREFIX="$prefix" &&
    cmake --build "$dir/build" -j"${JOBS:-2}" &&
    cmake --install "$dir/build"
} >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "tsan_abseil: the build failed; the whole log is $log" >&2
  exit 1
fi
rm -rf "$dir/build" "$dir/src" "$dir/apt"
touch "$prefix/.complete"
echo "$prefix"
