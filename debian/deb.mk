# debian/deb.mk -- `make deb`: the Debian packages (debian/, docs/packaging.md);
# included at the end of the Makefile.
#
#   make deb    builds libnumacoll0, libnumacoll-dev, numacoll-tools and
#               openmpi-coll-numacoll with dpkg-buildpackage -us -uc -b, in
#               a temporary copy of the working tree (uncommitted work
#               included; no .git, no build*/ folders), so neither this
#               tree's build folders nor its parent folder are touched, and
#               puts the four .deb files (with the .changes and .buildinfo
#               files and build.log) in $(NC_DEB_OUT), their -dbgsym
#               packages in $(NC_DEB_OUT)/dbgsym.
#
# The package build tools (dpkg-dev, debhelper, fakeroot) and debian/control's
# Build-Depends are installed with apt-get when missing (as root, else
# through sudo). The version is debian/changelog's; when the Makefile
# states the library's version, the two must agree.

NC_DEB_OUT ?= build/deb
NC_DEB_CHANGELOG_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog 2>/dev/null)
# The library version the Makefile states, if it states one.
NC_DEB_LIB_VERSION = $(firstword $(NUMACOLL_VERSION) $(VERSION))

.PHONY: deb
deb:
	@set -e; \
	upstream=$$(echo '$(NC_DEB_CHANGELOG_VERSION)' | sed 's/^[0-9]*://; s/-[^-]*$$//'); \
	if [ -n '$(NC_DEB_LIB_VERSION)' ] && [ "$$upstream" != '$(NC_DEB_LIB_VERSION)' ]; then \
	  echo "numacoll: debian/changelog says $$upstream, the Makefile $(NC_DEB_LIB_VERSION);"; \
	  echo "  add a changelog entry first: dch -v $(NC_DEB_LIB_VERSION) 'New version.'  (package devscripts)"; \
	  exit 2; \
	fi; \
	sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	if ! command -v dpkg-buildpackage >/dev/null 2>&1 || ! command -v dh >/dev/null 2>&1 || \
	   ! command -v fakeroot >/dev/null 2>&1; then \
	  echo "numacoll: installing the package build tools (apt-get install debhelper dpkg-dev fakeroot)"; \
	  $$sudo apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends \
	    debhelper dpkg-dev fakeroot build-essential; \
	fi; \
	tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/numacoll-deb.XXXXXX"); \
	trap 'rm -rf "$$tmp"' EXIT; \
	src=$$tmp/numacoll-$$upstream; \
	mkdir -p "$$src"; \
	tar -cf - --exclude=./.git --exclude='./build' --exclude='./build-*' \
	    --exclude=./debian/.debhelper --exclude=./debian/tmp --exclude=./debian/files \
	    --exclude='./debian/*.substvars' --exclude=./debian/debhelper-build-stamp \
	    --exclude=./debian/libnumacoll0 --exclude=./debian/libnumacoll-dev \
	    --exclude=./debian/numacoll-tools --exclude=./debian/openmpi-coll-numacoll \
	    . | tar -C "$$src" -xf -; \
	if ! (cd "$$src" && dpkg-checkbuilddeps >/dev/null 2>&1); then \
	  echo "numacoll: installing the Build-Depends of debian/control (apt-get build-dep)"; \
	  $$sudo apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get build-dep -y -qq "$$src"; \
	fi; \
	echo "numacoll: dpkg-buildpackage -us -uc -b in $$src"; \
	(cd "$$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	    dpkg-buildpackage -us -uc -b -Jauto) >"$$tmp/build.log" 2>&1 || { \
	  tail -n 60 "$$tmp/build.log"; mkdir -p $(NC_DEB_OUT); cp "$$tmp/build.log" $(NC_DEB_OUT)/build.log; \
	  echo "numacoll: dpkg-buildpackage failed; full log: $(NC_DEB_OUT)/build.log"; exit 1; }; \
	mkdir -p $(NC_DEB_OUT)/dbgsym; \
	rm -f $(NC_DEB_OUT)/*.deb $(NC_DEB_OUT)/*.changes $(NC_DEB_OUT)/*.buildinfo $(NC_DEB_OUT)/dbgsym/*.deb; \
	mv "$$tmp"/*-dbgsym_*.deb $(NC_DEB_OUT)/dbgsym/ 2>/dev/null || true; \
	cp "$$tmp"/*.deb "$$tmp"/*.changes "$$tmp"/*.buildinfo "$$tmp/build.log" $(NC_DEB_OUT)/; \
	echo "numacoll: packages in $(NC_DEB_OUT) (debug symbols in $(NC_DEB_OUT)/dbgsym):"; \
	cd $(NC_DEB_OUT) && ls -l *.deb
