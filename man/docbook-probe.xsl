<?xml version='1.0'?>
<!DOCTYPE xsl:stylesheet PUBLIC "-//OASIS//DTD DocBook XML V4.5//EN"
        "http://www.oasis-open.org/docbook/xml/4.5/docbookx.dtd">
<!-- SPDX-License-Identifier: LGPL-2.1-or-later -->

<!--
  Configure-time probe: man/meson.build runs xsltproc offline (the nonet option) with this
  file as both the stylesheet and the document. It prints "ok" and nothing else only when
  both halves of the DocBook tool chain resolve through the local XML catalog: the DOCTYPE
  above loads the DocBook XML 4.5 DTD (package docbook-xml; when that is missing xsltproc
  only warns, which is why meson also insists on an empty standard error), and the import
  below loads the manpages stylesheet (package docbook-xsl).
-->

<xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" version="1.0">
  <xsl:import href="http://docbook.sourceforge.net/release/xsl/current/manpages/docbook.xsl"/>
  <xsl:output method="text"/>
  <xsl:template match="/">
    <xsl:text>ok&#10;</xsl:text>
  </xsl:template>
</xsl:stylesheet>
