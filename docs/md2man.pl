#!/usr/bin/perl
# docs/md2man.pl: the markdown of docs/*.md and policies/SCHEMA.md to a man(7) page.
#
#	perl docs/md2man.pl NAME SECTION SUMMARY [SOURCE] < in.md > out
#
# NAME and SECTION go into .TH (NAME upper-cased), SUMMARY into the NAME section
# ("NAME \- SUMMARY"), which comes first; SOURCE (e.g. "airlock 0.2.0") is the
# footer's.  The date is $SOURCE_DATE_EPOCH's, else none (the page is reproducible).
#
# The subset, and nothing else: a block it does not know (a nested list, a deeper
# heading, a table row of other cells than its header's, an unclosed ``` or `) is
# an error naming its line, so that a page never renders quietly wrong.
#	# Title		the first line; dropped (the NAME line stands for it)
#	## X		.SH X, upper-cased but for `code`; text before the first
#			## goes under .SH DESCRIPTION
#	### X		.SS X
#	paragraphs	.PP (lines joined; a blank line ends one)
#	```  ```	.nf/.fi, indented; so are lines indented 4 spaces after a
#			blank line, but for after a list item
#	- item		.IP \(bu 2, with its continuation lines (indented or not);
#	1. item		.IP 1. 4; no nested lists
#	| a | b |	a tbl table (the page then starts with '\" t): a header row,
#			|---|:---:|---:| (l, c, r), rows of as many cells; \| is a
#			pipe in a cell; every cell a T{ T} block, the columns as wide
#			as an 80-column terminal allows (code may break after a /)
#	`code`		\fB..\fR (no markup inside), **bold** \fB..\fR, *em* \fI..\fR
#			(a * without its closer stays a *, as GitHub shows it),
#			[text](link) the text, \X a literal punctuation character X
# Backslashes are written \e, a leading . or ' gets \&, a - that is not inside a
# word \- (an option's dashes stay ASCII), other non-ASCII characters \[uXXXX].
# Nothing is hyphenated (.nh).
use strict;
use warnings;

binmode(STDIN, ':encoding(UTF-8)');
binmode(STDOUT, ':encoding(UTF-8)');

die "usage: md2man.pl NAME SECTION SUMMARY [SOURCE] < in.md > out\n"
    if @ARGV < 3 || @ARGV > 4;
my ($name, $section, $summary, $source) = @ARGV;
$source = '' unless defined $source;

my @in = <STDIN>;
my $ln = 0;		# index into @in of the line being read
my @out;		# the page's lines
my $tables = 0;

sub fail { die "md2man: line " . ($ln + 1) . ": $_[0]\n"; }

for ($ln = 0; $ln < @in; $ln++) {
	$in[$ln] =~ s/\r?\n\z//;
	$in[$ln] =~ s/\s+\z//;
	fail("a tab (write spaces)") if $in[$ln] =~ /\t/;
}
$ln = 0;

# Text for roff: escapes, and the - rule.  $head: inside a macro's argument.
sub esc {
	my ($s, $code, $head) = @_;
	$s =~ s/\\/\\e/g;
	if ($code) {
		$s =~ s/-/\\-/g;
	} else {
		$s =~ s/(?<![A-Za-z0-9])-|-(?![A-Za-z0-9])/\\-/g;
	}
	$s =~ s/"/\\(dq/g if $head;
	$s =~ s/([^\x00-\x7f])/sprintf('\\[u%04X]', ord($1))/ge;
	return $s;
}

# Where a code span in a table cell may break: after a / or ] that follows two
# characters of its word and comes before another (not a /).  \x00 marks them.
sub code_breaks {
	my $s = shift;
	$s =~ s{(?<=\S\S)([/\]])(?=[^\s/])}{$1\x00}g;
	return $s;
}

# `code` within a paragraph (bold; the page is not hyphenated at all: .nh); in a
# table cell ($break) a line may also break where code_breaks() says.
sub code_span {
	my ($s, $head, $break) = @_;
	$s =~ s/^ (.*\S.*) $/$1/;
	$s = code_breaks($s) if $break;
	my $e = esc($s, 1, $head);
	$e =~ s/\x00/\\:/g;
	return $e;
}

# The inline markup of one paragraph, heading or cell.  $mode: 'text', 'cell' (text
# in a table), 'sh' (upper case outside code, no font changes), 'ss' (no font
# changes).  Code spans first (nothing inside them is markup), then backslash
# escapes and links; * and ** are emphasis only where a closer matches (as GitHub
# renders them), else literal.
sub inline {
	my ($s, $mode) = @_;
	my $head = $mode eq 'sh' || $mode eq 'ss';
	my (@code, @lit);
	$s =~ s/(`+)(.+?)(?<!`)\1(?!`)/push(@code, $2); "\x01$#code\x02"/ge;
	fail("a ` that opens no code span") if $s =~ /`/;
	$s =~ s/\\([!-\/:-\@\[-`{-~])/push(@lit, $1); "\x05$#lit\x02"/ge;
	$s =~ s/\[([^\]]+)\]\(([^()\s]+)\)/$1/g;
	$s =~ s/\*\*(?=\S)(.+?)(?<=\S)\*\*/\x03B$1\x04/g;
	$s =~ s/(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])/\x03I$1\x04/g;
	my @font = ('R');
	my $font = sub { my $f = shift; return length($f) > 1 ? "\\f($f" : "\\f$f"; };
	my $out = '';
	for my $t (split(/(\x01\d+\x02|\x05\d+\x02|\x03[BI]|\x04)/, $s)) {
		if ($t =~ /^\x01(\d+)\x02$/) {
			my $c = code_span($code[$1], $head, $mode eq 'cell');
			$out .= $head ? $c : "\\fB$c" . $font->($font[-1]);
		} elsif ($t =~ /^\x05(\d+)\x02$/) {
			$out .= esc($lit[$1], 0, $head);
		} elsif ($t =~ /^\x03([BI])$/) {
			push(@font, $font[-1] eq 'R' ? $1 : 'BI');
			$out .= $font->($font[-1]) unless $head;
		} elsif ($t eq "\x04") {
			pop(@font);
			$out .= $font->($font[-1]) unless $head;
		} else {
			$out .= esc($mode eq 'sh' ? uc($t) : $t, 0, $head);
		}
	}
	return $out;
}

# A line of text: one that starts with . or ' is not a request.
sub text_line {
	my $s = shift;
	return $s =~ /^[.']/ ? "\\&$s" : $s;
}

sub code_block {
	my @l = @_;
	push(@out, '.PP', '.RS 4', '.nf');
	push(@out, text_line(esc($_, 1, 0))) for @l;
	push(@out, '.fi', '.RE');
}

# The cells of a table row; \| is a pipe, not a separator.
sub row_cells {
	my $l = shift;
	fail("a table row must start and end with |") unless $l =~ /^\|.*\|$/;
	$l =~ s/^\|//;
	$l =~ s/(?<!\\)\|$//;
	my @c = split(/(?<!\\)\|/, $l, -1);
	for (@c) {
		s/\\\|/|/g;
		s/^\s+|\s+$//g;
	}
	return @c;
}

# A cell's width as it renders, roughly, in ens: its length, and its longest word
# (code breaks where code_breaks() lets it), a capital letter taken as 1.4 (in a
# proportional font capitals are wider than an en; on a terminal every letter is
# one).
sub cell_width {
	my $s = shift;
	$s =~ s/\[([^\]]+)\]\([^()\s]+\)/$1/g;
	$s =~ s/\\([!-\/:-\@\[-`{-~])/$1/g;
	$s =~ s/\*\*//g;
	$s =~ s{(`+)(.+?)(?<!`)\1(?!`)}{code_breaks($2)}ge;
	my $ens = sub { my $t = shift; my $caps = () = $t =~ /[A-Z]/g;
	    return int(length($t) + 0.4 * $caps + 0.999); };
	my $word = 0;
	for (split(/[\s\x00]+/, $s)) {
		my $w = $ens->($_);
		$word = $w if $w > $word;
	}
	$s =~ s/\x00//g;
	return ($ens->($s), $word);
}

# Column widths for a table of natural widths @$nat and longest words @$word: what
# fits a terminal of 80 columns (71 ens beside the page's indent, 3 between
# columns), each column at least its longest word, the rest shared in proportion to
# what each column would still take.
sub table_widths {
	my ($nat, $word) = @_;
	my $n = @$nat;
	my $budget = 71 - 3 * ($n - 1);
	my @w = @$word;
	my @want = map { $nat->[$_] > $w[$_] ? $nat->[$_] - $w[$_] : 0 } 0 .. $n - 1;
	my ($sum, $wants) = (0, 0);
	$sum += $_ for @w;
	$wants += $_ for @want;
	fail("a table too wide for a terminal: its longest words alone take " .
	    "$sum of $budget columns") if $sum > $budget;
	my $room = $budget - $sum;
	for my $i (0 .. $n - 1) {
		$w[$i] += $wants <= $room ? $want[$i] : int($room * $want[$i] / $wants);
	}
	return @w;
}

sub table {
	my @rows = @_;		# source lines
	my $start = $ln;
	my @head = row_cells(shift(@rows));
	$ln++;
	my @sep = row_cells(shift(@rows));
	fail("the second line of a table must be |---|---|") unless
	    @sep == @head && !grep { !/^:?-{3,}:?$/ } @sep;
	my @align = map { /^:.*:$/ ? 'c' : /:$/ ? 'r' : 'l' } @sep;
	my @body;
	for my $r (@rows) {
		$ln++;
		my @c = row_cells($r);
		fail(sprintf("a table row of %d cell%s under a header of %d", scalar(@c),
		    @c == 1 ? '' : 's', scalar(@head))) unless @c == @head;
		push(@body, \@c);
	}
	my $end = $ln;
	my (@nat, @word);
	for my $r (\@head, @body) {
		for my $i (0 .. $#head) {
			my ($n, $w) = cell_width($r->[$i]);
			$nat[$i] = $n if !defined $nat[$i] || $n > $nat[$i];
			$word[$i] = $w if !defined $word[$i] || $w > $word[$i];
		}
	}
	$ln = $start;
	my @w = table_widths(\@nat, \@word);
	# Text blocks are not adjusted (a narrow column cannot be); .ad after the
	# table takes up the page's mode again.  On a terminal (one long page, cR),
	# groff 1.22.4's tbl spaces a row of text blocks down to where the page would
	# end: the .ne of the man macros makes the page long enough first.
	push(@out, '.PP', '.na', '.if \n[cR] .ne 1000v', '.TS',
	    join(' ', map { "$align[$_]bw($w[$_]n)" } 0 .. $#head),
	    join(' ', @align) . '.');
	my $cells = sub {
		my @f;
		for (@_) {
			push(@f, $_ eq '' ? '' :
			    "T{\n" . text_line(inline($_, 'cell')) . "\nT}");
		}
		push(@out, split(/\n/, join("\t", @f), -1));
	};
	$cells->(@head);
	push(@out, '_');
	for my $r (@body) {
		$ln++;
		$cells->(@$r);
	}
	push(@out, '.TE', '.ad');
	$ln = $end;
	$tables++;
}

# Blocks.
while ($ln < @in && $in[$ln] eq '') { $ln++; }
fail("the page must start with '# Title'") unless $ln < @in && $in[$ln] =~ /^# \S/;
$ln++;
my $sections = 0;
my $list = 0;		# the last block was a list item (blank lines between)
while ($ln < @in) {
	my $l = $in[$ln];
	if ($l eq '') {
		$ln++;
		next;
	}
	if ($l =~ /^(#+) (.*)$/) {
		my ($h, $t) = ($1, $2);
		if (length($h) == 2) {
			push(@out, '.SH ' . inline($t, 'sh'));
			$sections++;
		} elsif (length($h) == 3) {
			push(@out, '.SH DESCRIPTION') unless $sections++;
			push(@out, '.SS ' . inline($t, 'ss'));
		} else {
			fail("only ## and ### headings (and # once, first)");
		}
		$list = 0;
		$ln++;
		next;
	}
	push(@out, '.SH DESCRIPTION') unless $sections++;
	if ($l =~ /^```/) {
		my $start = $ln;
		my @c;
		$ln++;
		while ($ln < @in && $in[$ln] !~ /^```$/) {
			push(@c, $in[$ln++]);
		}
		$ln = $start, fail("a ``` block that does not end") if $ln >= @in;
		$ln++;
		code_block(@c);
		$list = 0;
		next;
	}
	if ($l =~ /^ {4}/ && !$list) {
		my @c;
		while ($ln < @in && ($in[$ln] =~ /^ {4}/ ||
		    ($in[$ln] eq '' && $ln + 1 < @in && $in[$ln + 1] =~ /^ {4}/))) {
			(my $c = $in[$ln++]) =~ s/^ {4}//;
			push(@c, $c);
		}
		code_block(@c);
		next;
	}
	if ($l =~ /^\|/) {
		my @t;
		while ($ln + @t < @in && $in[$ln + @t] =~ /^\|/) {
			push(@t, $in[$ln + @t]);
		}
		fail("a table needs a header row and a |---| row") if @t < 2;
		table(@t);
		$ln++;
		$list = 0;
		next;
	}
	fail("nested lists are not supported") if $l =~ /^\s+([-*+]|\d+\.) /;
	fail("indented text after a blank line: a list item's second paragraph " .
	    "(not supported), or code (needs a block other than a list before it)")
	    if $l =~ /^\s/;
	my ($tag, $text);
	if ($l =~ /^[-*+] (.*)$/) {
		($tag, $text) = ('\(bu 2', $1);
	} elsif ($l =~ /^(\d+)\. (.*)$/) {
		($tag, $text) = ("$1. 4", $2);
	} else {
		$text = $l;
	}
	$ln++;
	# The block's other lines: up to a blank line or the start of another block.
	while ($ln < @in && $in[$ln] ne '' && $in[$ln] !~ /^(#|```|\||[-*+] |\d+\. )/) {
		my $c = $in[$ln];
		fail("nested lists are not supported") if $c =~ /^\s+([-*+]|\d+\.) /;
		fail("a ``` block inside a paragraph or list item") if $c =~ /^\s*```/;
		$c =~ s/^\s+//;
		$text .= " $c";
		$ln++;
	}
	if (defined $tag) {
		push(@out, ".IP $tag", text_line(inline($text, 'text')));
		$list = 1;
	} else {
		push(@out, '.PP', text_line(inline($text, 'text')));
		$list = 0;
	}
}

my $date = '';
if (defined $ENV{SOURCE_DATE_EPOCH} && $ENV{SOURCE_DATE_EPOCH} =~ /^\d+$/) {
	my @t = gmtime($ENV{SOURCE_DATE_EPOCH});
	$date = sprintf('%04d-%02d-%02d', $t[5] + 1900, $t[4] + 1, $t[3]);
}
my @page;
push(@page, q('\" t)) if $tables;
push(@page, '.\" Made by docs/md2man.pl from markdown: edit that, not this.');
push(@page, sprintf('.TH "%s" "%s" "%s" "%s" "%s"', esc(uc($name), 1, 1),
    esc($section, 1, 1), $date, esc($source, 0, 1), 'airlock'));
# No hyphenation: code and names are not words to split.
push(@page, '.nh');
push(@page, '.SH NAME', esc($name, 1, 0) . ' \- ' . text_line(esc($summary, 0, 0)));
print "$_\n" for (@page, @out);
