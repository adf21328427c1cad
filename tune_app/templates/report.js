// Marks the page rendered once every image decoded, so a headless browser can check it.
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const ok = images.every((img) => img.complete && img.naturalWidth > 0);
  document.body.dataset.imageCount = String(images.length);
  document.body.dataset.images = ok ? "ok" : "broken";
});
