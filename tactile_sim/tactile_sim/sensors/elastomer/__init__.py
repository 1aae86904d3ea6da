"""ElastomerTaxel: marker displacement of a soft gel skin (dilation field, shear anchors, layer profile)."""
