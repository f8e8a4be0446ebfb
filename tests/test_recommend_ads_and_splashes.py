"""Recommended operations the review of 2026-12-05 found wrong, mended (findings 2, 4, 5).

A full-screen ad is known by its activity's ad-SDK package or its big box's resource name (or
StartApp's tag on its web view), not by a word inside a name or a page title; a pop-up the pixels
see saying work is under way gets "wait", not "press back" (back would cancel it); a picture
and a few short lines the tree reads are a splash to wait out only when something names the
screen a passing one (a photo viewer, a comic's page, a QR code never change by themselves).
"""

from __future__ import annotations

from dataclasses import replace

from perception.fusion.candidates import Candidate
from perception.types import BoxPx, Channel, ElementFlag
from tests._candidates import INFO, ad_page, element as _el, ops as _ops, tree_candidates as _tree

_CLICK = ElementFlag.CLICKABLE


# --- finding 2: a full-screen ad ---------------------------------------------------------------


def test_an_activity_holding_adactivity_in_its_name_is_no_ad() -> None:
    for act in ("com.reader/.ReadActivity", "org.example.DownloadActivity",
                "com.forum/com.forum.ThreadActivity", "com.cloud.UploadActivity",
                "com.x/.LoadActivity", "com.x/.InterstitialHelpActivity"):
        assert _ops(ad_page("Page"), replace(INFO, activity=act)) == [], act


def test_an_ad_sdks_activity_is_a_full_screen_ad() -> None:
    for act in ("com.google.android.gms.ads.AdActivity",
                "com.HomeCleaningGames/com.startapp.android.publish.AppWallActivity",
                "com.game/com.applovin.adview.AppLovinInterstitialActivity",
                "com.game/com.facebook.ads.AudienceNetworkActivity",
                "com.game/com.unity3d.ads.adunit.AdUnitActivity",
                "com.game/com.vungle.warren.AdActivity",
                "com.game/com.ironsource.sdk.controller.ControllerActivity"):
        assert _ops(ad_page("Page"), replace(INFO, activity=act)) == [("dismiss", "X")], act


def test_a_page_titled_after_an_ad_sdk_is_no_ad() -> None:
    """Text on the screen is data: a developer-docs page about AdMob is a page."""
    for title in ("AdMob Help Center", "Vungle SDK docs", "StartApp docs", "Interstitial ads"):
        assert _ops(ad_page(title)) == [], title
    # StartApp's tag on its own web view (its whole label), and an ad SDK's resource name on
    # the big box, still say so.
    assert _ops(ad_page("StartApp")) == [("dismiss", "X")]
    assert _ops(ad_page("[applovin_interstitial_view]")) == [("dismiss", "X")]
    assert _ops(ad_page("[download_view]")) == []


# --- finding 4: a progress pop-up --------------------------------------------------------------


def _line(i: int, text: str, box: tuple[int, int, int, int]) -> Candidate:
    return Candidate(id=i, source=Channel.PIXEL, kind="text", text=text, box_px=BoxPx(*box),
                     confidence=0.9, flags=ElementFlag.NONE, origin="ocr")


def test_a_pop_up_saying_work_is_under_way_is_not_cancelled() -> None:
    for msg in ("Signing you in to your account", "Connecting to the server",
                "Processing your payment", "Uploading 3 photos to the cloud",
                "Saving your changes to the file", "正在处理您的付款",
                "Your order is being placed…", "Hold on, please wait a moment"):
        ops = _ops([_line(1, msg, (200, 1150, 900, 1210))], modal=True)
        assert ops == [("wait", None)], msg
    # A message about work that is over (or failed) is still pressed back.
    for msg in ("Error uploading your photo", "Your payment was processed.",
                "No apps can perform this action."):
        assert _ops([_line(1, msg, (200, 1150, 900, 1210))], modal=True) == [("dismiss", None)]


# --- finding 5: a splash the tree reads --------------------------------------------------------


def test_a_picture_with_a_few_lines_is_no_splash_without_a_sign() -> None:
    viewer = _tree(_el(0, "img", "", (0, 0, 1080, 2400)),
                   _el(1, "text", "3 / 12", (480, 2250, 600, 2320)))
    photo = _tree(_el(0, "img", "Photo", (0, 300, 1080, 2000)),
                  _el(1, "text", "IMG_2041.jpg", (40, 2100, 600, 2160)))
    comic = _tree(_el(0, "img", "", (0, 0, 1080, 2400)),
                  _el(1, "text", "Page 14", (480, 2250, 600, 2320)))
    qr = _tree(_el(0, "img", "QR code", (240, 700, 840, 1300)),
               _el(1, "text", "Scan to pay", (300, 1400, 780, 1460)))
    for screen in (viewer, photo, comic, qr):
        assert _ops(screen) == []
    # What names the screen a passing one: its activity, a resource name, a logo.
    assert _ops(comic, replace(INFO, activity="com.app/.SplashActivity")) == [("wait", None)]
    assert _ops(comic, replace(INFO, activity="com.app/.ui.LaunchScreen")) == [("wait", None)]
    assert _ops(comic, replace(INFO, activity="com.app/.ComicReaderActivity")) == []
    assert _ops(comic, hints="android.widget.imageview com.app:id/iv_splash") == [("wait", None)]
    assert _ops(comic, hints="android.widget.imageview com.app:id/btn_logout") == []
    logo = _tree(_el(0, "img", "Logo", (0, 600, 1080, 1500)),
                 _el(1, "text", "Chatter", (300, 1600, 780, 1660)))
    assert _ops(logo) == [("wait", None)]
