# cmake -DIN=FILE -DOUT=FILE.c -DNAME=symbol -P embed.cmake
# Writes FILE's bytes as `const char NAME[]` (NUL-terminated) and
# `const unsigned long NAME_len` into OUT, so a shipped file (the default
# alert rules) is part of the binary and still a file in the tree.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n\t" body "${body}")
file(WRITE ${OUT} "/* Generated from ${IN}; do not edit. */\n"
	"extern const char ${NAME}[];\nextern const unsigned long ${NAME}_len;\n"
	"const char ${NAME}[] = {\n\t${body}0x00\n};\n"
	"const unsigned long ${NAME}_len = ${len};\n")
