# SPDX-License-Identifier: GPL-2.0
# kcsan-filter.awk: a kernel log without the KCSAN reports that a list
# of accepted ones (tests/kcsan-accepted) accepts.
#
#   awk -v accepted=tests/kcsan-accepted [-v notes=FILE] -f build-aux/kcsan-filter.awk LOG
#
# Prints LOG (dmesg lines, with or without "[ seconds]" stamps), leaving
# out each KCSAN report (from its "=====" line before "BUG: KCSAN:" to
# the "=====" line that ends it) that is accepted: its first line says
# "data-race in A / B" with the pair A, B listed in the accepted file
# (either order), every frame of its stacks is a function name without
# "afbus", "af_bus" or "dbus" (AF_BUS's and nfdbus' functions: a report
# with one of them in either stack is never accepted), and it ends.  A
# line inside the report that is not a line of KCSAN's report format (a
# message of another CPU printed meanwhile) is kept.  For each accepted
# report one line "accepted: data-race in A / B: REASON" goes to notes
# (default: standard error).  Everything else is printed as it is, so a
# check of the output for "BUG:" fails on any other report.
#
# The accepted file: "#" comments, blank lines, and lines
# "FUNCTION-A FUNCTION-B REASON"; a line without a reason, or one that
# names an AF_BUS or nfdbus function, is ignored, with a note.

function body(s) {
	sub(/\r$/, "", s)
	sub(/^\[ *[0-9]+\.[0-9]+\] ?/, "", s)
	return s
}

function is_ruler(s) {
	return s ~ /^=================+$/
}

function ours(f) {
	return tolower(f) ~ /afbus|af_bus|dbus/
}

# A line of KCSAN's report format (kernel/kcsan/report.c), its body s.
function report_line(s) {
	return s == "" || s ~ /^BUG: KCSAN: / ||
		s ~ /^(read|write|read-write)( \(marked\))?( \(reordered\))? to 0x[0-9a-f]+ of [0-9]+ bytes by (task [0-9]+|interrupt) on cpu [0-9]+:$/ ||
		s ~ /^ +[A-Za-z0-9_.$]+\+0x[0-9a-f]+\/0x[0-9a-f]+( \[[A-Za-z0-9_]+\])?$/ ||
		s ~ /^value changed: 0x[0-9a-f]+ -> 0x[0-9a-f]+$/ ||
		s ~ /^Reported by Kernel Concurrency Sanitizer on:$/ ||
		s ~ /^CPU: [0-9]+ PID: [0-9]+ Comm: / ||
		s ~ /^Hardware name: /
}

function note(s) {
	print s > notes
}

# The report held in held[1..nheld]: accepted or printed whole.
function end_report(complete,   i, s, f, a, b, why) {
	why = ""
	if (!complete)
		why = "unfinished"
	else if (!match(header, /^BUG: KCSAN: data-race in [A-Za-z0-9_.]+ \/ [A-Za-z0-9_.]+$/))
		why = "not a data race between two named functions"
	else {
		s = header
		sub(/^BUG: KCSAN: data-race in /, "", s)
		split(s, f, / \/ /)
		a = f[1]; b = f[2]
		if (!((a, b) in pair))
			why = "pair not listed"
		else if (tainted != "")
			why = "AF_BUS frame " tainted
	}
	if (why == "") {
		note("accepted: data-race in " a " / " b ": " pair[a, b])
		# keep the lines of other messages printed meanwhile
		for (i = 1; i <= nheld; i++)
			if (!report_line(body(held[i])) && !is_ruler(body(held[i])))
				print held[i]
	} else {
		for (i = 1; i <= nheld; i++)
			print held[i]
	}
	nheld = 0
	inrep = 0
}

BEGIN {
	if (notes == "")
		notes = "/dev/stderr"
	if (accepted == "") {
		print "kcsan-filter.awk: no accepted file (-v accepted=FILE)" > "/dev/stderr"
		exit 2
	}
	n = 0
	while ((r = getline line < accepted) > 0) {
		n++
		if (line ~ /^[ \t]*(#|$)/)
			continue
		k = split(line, w, /[ \t]+/)
		if (k < 3) {
			note("kcsan-accepted:" n ": no reason, ignored: " line)
			continue
		}
		if (ours(w[1]) || ours(w[2])) {
			note("kcsan-accepted:" n ": an AF_BUS or nfdbus function, ignored: " line)
			continue
		}
		reason = line
		sub(/^[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+/, "", reason)
		pair[w[1], w[2]] = reason
		pair[w[2], w[1]] = reason
	}
	if (r < 0) {
		print "kcsan-filter.awk: cannot read " accepted > "/dev/stderr"
		exit 2
	}
	inrep = 0
	ruler = ""
}

{
	s = body($0)
	if (inrep) {
		held[++nheld] = $0
		if (is_ruler(s)) {
			end_report(1)
		} else if (s ~ /^ +[A-Za-z0-9_.$]+\+0x/ && tainted == "") {
			f = s
			sub(/^ +/, "", f)
			sub(/\+0x.*/, "", f)
			if (ours(f) || s ~ /\[[A-Za-z0-9_]*dbus[A-Za-z0-9_]*\]$/)
				tainted = f
		}
		next
	}
	if (ruler != "") {
		if (s ~ /^BUG: KCSAN: /) {
			inrep = 1
			nheld = 0
			held[++nheld] = ruler
			held[++nheld] = $0
			header = s
			tainted = ""
			ruler = ""
			next
		}
		print ruler
		ruler = ""
	}
	if (is_ruler(s)) {
		ruler = $0
		next
	}
	print
}

END {
	if (ruler != "")
		print ruler
	if (inrep)
		end_report(0)
}
