# man/help2roff.awk -- a program's --help on stdin, a man page on stdout;
# so the page says what the installed program says, and nothing to keep
# in step by hand. Variables: name, version, summary (the NAME line).
#
# The --help layout it reads (numacoll-bench's and numacoll-tune's):
#   usage: NAME ARGS            synopsis (indented lines continue it)
#   text                        description, up to the first option
#     -x, --long ARG   text     an option, indented at most 6 columns; its
#                      text...  text column is the indent of the first
#                               continuation line after the first option
#   text                        after the options: notes
{ line[++n] = $0 }

function esc(s) {
    gsub(/\\/, "\\e", s)
    if (s ~ /^[.']/)
        s = "\\&" s
    return s
}
function dash(s) { gsub(/-/, "\\-", s); return s }
function lead(s) { match(s, /^ */); return RLENGTH }
# (no /{1,6}/: mawk, Debian's default awk, has no interval expressions)
function is_option(s,    k) {
    k = lead(s)
    return k >= 1 && k <= 6 && substr(s, k + 1, 1) == "-"
}

END {
    col = 0
    for (i = 1; i <= n && !is_option(line[i]); i++)
        ;
    for (; i <= n; i++)
        if (!is_option(line[i]) && lead(line[i]) > 6) {
            col = lead(line[i])
            break
        }
    printf ".TH %s 1 \"\" \"numacoll %s\" \"User Commands\"\n", toupper(name), version
    printf ".SH NAME\n%s \\- %s\n", name, esc(summary)

    i = 1
    syn = line[i]
    sub(/^[Uu]sage: *[^ ]+ */, "", syn)
    while (i < n && line[i + 1] ~ /^ / && !is_option(line[i + 1])) {
        rest = line[++i]
        sub(/^ +/, " ", rest)
        syn = syn rest
    }
    printf ".SH SYNOPSIS\n.B %s\n%s\n", name, dash(esc(syn))

    printf ".SH DESCRIPTION\n"
    for (i++; i <= n && !is_option(line[i]); i++)
        print esc(line[i])

    printf ".SH OPTIONS\n"
    for (; i <= n && (is_option(line[i]) || lead(line[i]) > 6); i++) {
        s = line[i]
        if (is_option(s)) {
            spec = s; text = ""
            if (col && length(s) > col && substr(s, col, 1) == " ") {
                spec = substr(s, 1, col)
                text = substr(s, col + 1)
            }
            sub(/^ +/, "", spec); sub(/ +$/, "", spec)
            printf ".TP\n.B %s\n", dash(esc(spec))
            if (text != "")
                print esc(text)
        } else {
            sub(/^ +/, "", s)
            print esc(s)
        }
    }

    if (i <= n)
        printf ".SH NOTES\n"
    for (; i <= n; i++)
        print esc(line[i])
    printf ".SH \"SEE ALSO\"\nThe numacoll documentation: docs/ in its source tree.\n"
}
