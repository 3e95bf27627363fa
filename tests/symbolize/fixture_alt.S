/* A function whose DWARF name is in a dwz alt file: DW_AT_name is
 * DW_FORM_GNU_strp_alt, offset 0 of the alt file's .debug_str.  The test
 * adds the .gnu_debugaltlink section that names the alt file. */
	.text
	.globl	_start
	.type	_start, @function
_start:
	call	alt_named
	hlt
	.size	_start, .-_start

	.globl	alt_named
	.type	alt_named, @function
alt_named:
	nop
	nop
	nop
	ret
.Lalt_named_end:
	.size	alt_named, .-alt_named

	.section .debug_abbrev,"",@progbits
.Labbrev:
	.uleb128 1		/* abbreviation 1 */
	.uleb128 0x11		/* DW_TAG_compile_unit */
	.byte	1		/* DW_CHILDREN_yes */
	.uleb128 0x11		/* DW_AT_low_pc */
	.uleb128 0x01		/* DW_FORM_addr */
	.uleb128 0x12		/* DW_AT_high_pc */
	.uleb128 0x07		/* DW_FORM_data8: length */
	.uleb128 0x13		/* DW_AT_language */
	.uleb128 0x0b		/* DW_FORM_data1 */
	.byte	0, 0
	.uleb128 2		/* abbreviation 2 */
	.uleb128 0x2e		/* DW_TAG_subprogram */
	.byte	0		/* DW_CHILDREN_no */
	.uleb128 0x03		/* DW_AT_name */
	.uleb128 0x1f21		/* DW_FORM_GNU_strp_alt */
	.uleb128 0x11		/* DW_AT_low_pc */
	.uleb128 0x01		/* DW_FORM_addr */
	.uleb128 0x12		/* DW_AT_high_pc */
	.uleb128 0x07		/* DW_FORM_data8 */
	.byte	0, 0
	.byte	0

	.section .debug_info,"",@progbits
	.long	.Linfo_end - .Linfo_start
.Linfo_start:
	.value	4		/* DWARF 4 */
	.long	.Labbrev
	.byte	8
	.uleb128 1
	.quad	alt_named
	.quad	.Lalt_named_end - alt_named
	.byte	0x0c		/* DW_LANG_C99 */
	.uleb128 2
	.long	0		/* "alt_dwarf_name" in the alt file */
	.quad	alt_named
	.quad	.Lalt_named_end - alt_named
	.byte	0		/* end of the unit's children */
.Linfo_end:
