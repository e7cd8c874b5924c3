<?xml version='1.0'?>
<!-- SPDX-License-Identifier: LGPL-2.1-or-later -->

<!--
  tonari's layer over the DocBook "manpages" stylesheet. The import is by URL and resolves
  through the XML catalog to the local docbook-xsl package (xsltproc runs with nonet).

  What it changes, and why:
  - no "Note: Writing ..." chatter and no "no date" notes: a clean build prints nothing;
  - no date in the page footer nor in the comment at the top: the same sources give
    byte-identical pages on every build (the stock comment also names a "FIXME" author);
  - no AUTHOR or COPYRIGHT sections: the pages have no per-person authorship to list;
  - C prototypes, should a page ever show one, in ANSI style;
  - tables use the whole width of the page for their last column, instead of tbl's default of a
    third of the line per text block.
-->

<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">

  <xsl:import href="http://docbook.sourceforge.net/release/xsl/current/manpages/docbook.xsl"/>

  <xsl:param name="man.output.quietly" select="1"/>
  <xsl:param name="refentry.meta.get.quietly" select="1"/>
  <xsl:param name="man.th.extra1.suppress" select="1"/>
  <xsl:param name="man.authors.section.enabled" select="0"/>
  <xsl:param name="man.copyright.section.enabled" select="0"/>
  <xsl:param name="funcsynopsis.style">ansi</xsl:param>
  <!-- The longest page name, org.tonari.Manager1, must not be cut in the page header. -->
  <xsl:param name="man.th.title.max.length" select="40"/>

  <!-- The stock format section gives every column a plain key letter; tbl then makes each text
       block a third of the line wide, wraps prose into a narrow strip and cannot break long
       names at all. Expanding the last column of each row lets the text use the page. -->
  <xsl:template match="cell" mode="table.format">
    <xsl:apply-imports/>
    <xsl:if test="not(following-sibling::cell[1]) or following-sibling::cell[1]/@row != @row">
      <xsl:text>x</xsl:text>
    </xsl:if>
  </xsl:template>

  <!-- Replaces the stock header comment (title, author, generator, date, ...). -->
  <xsl:template name="top.comment">
    <xsl:param name="title"/>
    <xsl:param name="source"/>
    <xsl:text>.\" </xsl:text>
    <xsl:call-template name="replace.dots.and.dashes">
      <xsl:with-param name="content" select="$title"/>
    </xsl:call-template>
    <xsl:text> (</xsl:text>
    <xsl:call-template name="replace.dots.and.dashes">
      <xsl:with-param name="content" select="$source"/>
    </xsl:call-template>
    <xsl:text>): generated from DocBook XML by xsltproc; edit the XML source, not this file.&#10;</xsl:text>
    <xsl:text>.\"&#10;</xsl:text>
  </xsl:template>

</xsl:stylesheet>
