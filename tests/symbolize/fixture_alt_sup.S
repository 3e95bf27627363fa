/* The dwz alt file of fixture_alt.S: the string it names, and a unit of
 * its own so that libdw takes it for DWARF. */
	.text
	.globl	_start
_start:
	hlt

	.section .debug_str,"",@progbits
	.string	"alt_dwarf_name"

	.section .debug_abbrev,"",@progbits
.Labbrev:
	.uleb128 1
	.uleb128 0x11		/* DW_TAG_compile_unit */
	.byte	0		/* DW_CHILDREN_no */
	.byte	0, 0
	.byte	0

	.section .debug_info,"",@progbits
	.long	.Linfo_end - .Linfo_start
.Linfo_start:
	.value	4
	.long	.Labbrev
	.byte	8
	.uleb128 1
.Linfo_end:
