#!/usr/bin/env bash
# scripts/pack-build-deps.sh DIR — copies the headers and libraries of the Debian build dependencies
# (stb, cJSON, libjpeg-turbo's TurboJPEG) into DIR/include and DIR/lib, so that `make DEPS_PREFIX=DIR` builds
# on a machine where they cannot be installed (the lent GPU machine has gcc and nvcc but no network).
set -euo pipefail
dir=${1:?usage: pack-build-deps.sh DIR}
mkdir -p "$dir/include/stb" "$dir/include/cjson" "$dir/lib"
cp /usr/include/stb/stb_image.h "$dir/include/stb/"
cp /usr/include/cjson/cJSON.h "$dir/include/cjson/"
cp /usr/include/turbojpeg.h "$dir/include/"
for h in jpeglib.h jconfig.h jmorecfg.h jerror.h; do
    f=$(find /usr/include -name "$h" | head -1); cp "$f" "$dir/include/"
done
lib=/usr/lib/x86_64-linux-gnu
cp "$lib/libturbojpeg.a" "$dir/lib/"
cp -P "$lib"/libcjson.so* "$dir/lib/"
cp -P "$lib"/libjpeg.a "$dir/lib/" 2>/dev/null || true
echo "packed build deps into $dir"
