# shellcheck shell=bash
# Small datasets for the integration tests, owned by the test user.

# make_dataset DIR: a tree with nested dirs, random binary files, an empty
# file, a name with a space, and a relative symlink inside the tree. Its
# top is 0750: the user's own data, staged per user (a tree readable by
# everyone would be a public dataset, shared across users: make_public).
make_dataset() {
	local dir=$1
	mkdir -p "$dir/train/a" "$dir/train/b/deep/er" "$dir/val"
	head -c 300000 /dev/urandom >"$dir/train/a/x.bin"
	head -c 4097 /dev/urandom >"$dir/train/b/y.bin"
	head -c 1 /dev/urandom >"$dir/train/b/deep/er/one.bin"
	: >"$dir/val/empty"
	printf 'label,file\n1,x\n' >"$dir/val/labels with space.csv"
	ln -s ../train/a/x.bin "$dir/val/link.bin"
	chown -R "$TEST_USER:" "$dir"
	chmod 0750 "$dir"
}

# tree_digest DIR: one line per entry (type, relative path, size or link
# target, sha256 of contents) so two trees compare byte for byte.
tree_digest() {
	(cd "$1" && find . -mindepth 1 -printf '%y %p %s %l\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}
export -f make_dataset tree_digest
